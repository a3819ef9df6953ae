"""Intercommunicators under SDR (preload/sdr/echo_sdr_inter.c), real ULFM runs: a coupled code
(tests/programs/coupled.c: two models split from MPI_COMM_WORLD, an intercommunicator between them, exchanges and
an Allreduce across it, merged back) prints what it prints natively in every replica, with a replica of either
model killed at its MPI_Intercomm_create, in the coupling loop, at the merge and after it; the collectives SDR does
not replicate on an intercommunicator stop the job naming the call."""

from __future__ import annotations

import pytest

from tests.conftest import echorun
from tests.preload.test_sdr import assert_survivors_native

N = 4  # ranks 0 and 2 are the ocean, 1 and 3 the atmosphere; ranks 0 and 1 lead them
CREATE, MERGE = 6, 109  # the calls (numbered as the records number them) of MPI_Intercomm_create and _merge


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced coupling time (a timing)."""
    return [line for line in lines if "coupling time" not in line]


def assert_every_finished_replica_native(mpi, programs, r) -> None:
    assert_survivors_native(mpi, programs, r, N, 2, "coupled", timeless)


def test_coupled_code_under_sdr(mpi, programs, tmp_path):
    """No failure: MPI_Intercomm_create, point-to-point, Bcast/Allreduce/Barrier/Allgather/Reduce across, merge."""
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *programs["coupled"]], tmp_path / "run",
                timeout=120)
    assert_every_finished_replica_native(mpi, programs, r)
    assert "lost replica" not in r.stderr


@pytest.mark.parametrize("kills", [
    [(0, 0, CREATE)],               # the ocean leader's replica, at the creation
    [(1, 1, CREATE)],               # the atmosphere leader's other replica, at the creation
    [(3, 0, CREATE)],               # an atmosphere rank that does not lead
    [(0, 1, CREATE), (1, 0, CREATE)],  # both leaders lose a replica at the creation
    [(1, 0, 4)],                    # just before it: the other group learns of it there
    [(2, 1, 40), (1, 0, 60)],       # in the coupling loop, one of each model
    [(0, 1, MERGE), (3, 0, MERGE)],  # at the merge, one of each model
    [(2, 0, MERGE + 3)],            # on the merged communicator
])
def test_coupled_code_with_replicas_killed(mpi, programs, tmp_path, kills):
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", "--inject", spec, *programs["coupled"]],
                tmp_path / "run", timeout=120)
    assert_every_finished_replica_native(mpi, programs, r)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


def test_a_collective_sdr_does_not_replicate_across_is_named(programs, tmp_path):
    """tests/programs/intercomm.c gathers over its intercommunicator after a Bcast and a Reduce: the job stops at
    MPI_Gather, named with the reason."""
    r = echorun(["--no-store", "-n", "4", "--mode", "sdr", "--replicas", "2", *programs["intercomm"]],
                tmp_path / "run", timeout=90)
    assert r.returncode != 0
    assert "MPI_Gather on an intercommunicator is not supported in SDR mode" in r.stderr, r.stderr
