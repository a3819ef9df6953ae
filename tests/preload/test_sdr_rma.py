"""One-sided communication under SDR (preload/sdr/echo_sdr_win.c), real ULFM runs: PRK-style one-sided kernels
(tests/programs/rma_kernels.c: a stencil whose halos are Put into MPI_Win_allocate windows, a transpose Put into an
MPI_Win_create window, Accumulate/Get/Fetch_and_op tallies, Compare_and_swap/Get_accumulate claims; fence epochs)
print what they print natively in every replica, with a replica killed before the first window, at a window's
creation, between epochs, inside an epoch (after some of its operations were sent), at the fence that applies them,
and at the free; the one-sided calls SDR does not replicate stop the job naming the call and why."""

from __future__ import annotations

import pytest

from tests.conftest import echorun
from tests.preload.test_sdr import assert_survivors_native

N = 3
# calls of rank 0 as the records number them (the same in every rank of rma_kernels at -n 3)
BEFORE, ALLOCATE, STENCIL_PUT, STENCIL_FENCE, BETWEEN = 2, 3, 22, 7, 20
CREATE, TRANSPOSE_PUT, ACCUMULATE, FETCH, GET, FREE = 47, 58, 123, 131, 126, 191
GET_ACCUMULATE, CLAIMS_FENCE = 195, 196  # claims: its MPI_Compare_and_swap is call 194


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced time (a timing)."""
    return [line for line in lines if "kernels time" not in line]


def run_kernels(programs, tmp_path, kills: list[tuple[int, int, int]]):
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    return echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *(["--inject", spec] if spec else []),
                    *programs["rma_kernels"]], tmp_path / "run", timeout=150)


def test_one_sided_kernels_under_sdr(mpi, programs, tmp_path):
    """No failure: every replica's windows end as natively (each kernel validates its own results)."""
    r = run_kernels(programs, tmp_path, [])
    assert_survivors_native(mpi, programs, r, N, 2, "rma_kernels", timeless)
    assert "validated" in r.stdout and "FAILED" not in r.stdout
    assert "lost replica" not in r.stderr


@pytest.mark.parametrize("kills", [
    [(0, 0, BEFORE)],                  # before any window: its windows are made without it
    [(1, 1, ALLOCATE)],                # at MPI_Win_allocate
    [(2, 0, STENCIL_FENCE)],           # at a fence, its epoch's Puts sent and not yet applied
    [(1, 0, BETWEEN)],                 # between epochs
    [(0, 1, STENCIL_PUT)],             # inside an epoch: one of its two Puts sent
    [(2, 1, CREATE)],                  # at MPI_Win_create
    [(1, 1, TRANSPOSE_PUT)],           # inside a transpose epoch
    [(0, 0, ACCUMULATE)],              # inside an epoch of Accumulates: each must count once in every replica
    [(2, 0, FETCH), (1, 1, GET)],      # at a Fetch_and_op and at a Get, two ranks
    [(0, 1, STENCIL_PUT), (2, 0, ACCUMULATE)],  # one rank in the stencil, another in the tally
    [(1, 0, FREE)],                    # at MPI_Win_free
    [(2, 1, GET_ACCUMULATE)],          # its Compare_and_swap sent, its Get_accumulate not
    [(0, 0, CLAIMS_FENCE)],            # the target of every claim, at the fence that answers them
])
def test_one_sided_kernels_with_replicas_killed(mpi, programs, tmp_path, kills):
    r = run_kernels(programs, tmp_path, kills)
    assert_survivors_native(mpi, programs, r, N, 2, "rma_kernels", timeless)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


@pytest.mark.parametrize(("program", "named"), [
    ("rma", "MPI_Win_post (SDR replicates fence epochs only: MPI_Win_fence) is not supported in SDR mode"),
    ("shared_nosync", "MPI_Win_allocate_shared (its loads and stores into other processes' memory bypass MPI"),
])
def test_one_sided_calls_sdr_does_not_replicate_are_named(programs, tmp_path, program, named):
    """tests/programs/rma.c runs a fence epoch, then a PSCW one; shared_nosync.c makes a shared-memory window."""
    r = echorun(["--no-store", "-n", "2", "--mode", "sdr", "--replicas", "2", *programs[program]], tmp_path / "run",
                timeout=120)
    assert r.returncode != 0
    assert named in r.stderr, r.stderr
