"""Group-collective and nonblocking communicator creation under SDR (preload/sdr/echo_sdr_comm.c), real ULFM runs.
A code whose particle-holding ranks make their own communicator with MPI_Comm_create_group (tests/programs/
create_group.c: at -n 4 every rank holds particles, so the group is all of MPI_COMM_WORLD, in reverse order) prints
what it prints natively in every replica, with a replica killed before, at and after the creation; so does one that
makes its communicator from the world's group with MPI_Comm_create_from_group (tests/programs/from_group.c).  A
group of part of the communicator (or of the world), and MPI_Comm_idup, stop the job naming the call and the reason
(made natively, a communicator from a group would join one replica world only: a death would stop that world)."""

from __future__ import annotations

import pytest

from tests.conftest import echorun
from tests.preload.test_sdr import assert_survivors_native

N = 4
CREATE = FROM_GROUP = 6  # the calls (numbered as the records number them) of MPI_Comm_create_group and _from_group


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced step time (a timing)."""
    return [line.split(", step time")[0] for line in lines]


@pytest.mark.parametrize("kills", [
    [],
    [(1, 0, 4)],                    # before it (MPI_Group_incl): the others learn of it at the creation
    [(0, 1, CREATE)],               # at the creation, the last member of the group
    [(3, 0, CREATE), (2, 1, CREATE)],  # at the creation, the group's leader and another rank
    [(2, 0, CREATE + 4)],           # on the new communicator, in its Allreduce loop
])
def test_a_group_of_every_rank_with_replicas_killed(mpi, programs, tmp_path, kills):
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    inject = ["--inject", spec] if kills else []
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *inject, *programs["create_group"]],
                tmp_path / "run", timeout=120)
    assert_survivors_native(mpi, programs, r, N, 2, "create_group", timeless)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


@pytest.mark.parametrize("kills", [[], [(2, 1, 2)], [(0, 0, FROM_GROUP)], [(3, 1, FROM_GROUP + 2)]])
def test_a_communicator_from_the_worlds_group_with_replicas_killed(mpi, programs, tmp_path, kills):
    """MPI_Comm_create_from_group of every rank (MPI-4, no parent): killed before (MPI_Comm_size), at it, and in
    its Allreduce."""
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    inject = ["--inject", spec] if kills else []
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *inject, *programs["from_group"]],
                tmp_path / "run", timeout=120)
    assert_survivors_native(mpi, programs, r, N, 2, "from_group")
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


@pytest.mark.parametrize(("program", "args", "refusal"), [
    ("create_group", ["even"], "MPI_Comm_create_group of a part of the communicator (only its members would agree"),
    ("idup_overlap", [], "MPI_Comm_idup (SDR's creation waits for every member, which a nonblocking call must not)"),
    ("from_group", ["even"], "MPI_Comm_create_from_group of a part of the world (only its members would agree"),
])
def test_a_creation_sdr_cannot_make_survivable_is_named_with_its_reason(programs, tmp_path, program, args, refusal):
    r = echorun(["--no-store", "-n", str(N), "--mode", "sdr", "--replicas", "2", *programs[program], *args],
                tmp_path / "run", timeout=90)
    assert r.returncode != 0
    assert refusal in r.stderr, r.stderr
    assert "is not supported in SDR mode" in r.stderr, r.stderr
