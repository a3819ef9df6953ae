"""One-sided communication under SDR (preload/sdr/echo_sdr_win.c), real ULFM runs: PRK-style one-sided kernels
(tests/programs/rma_kernels.c: a stencil whose halos are Put into MPI_Win_allocate windows, a transpose Put into an
MPI_Win_create window, Accumulate/Get/Fetch_and_op tallies, Compare_and_swap/Get_accumulate claims; fence epochs)
print what they print natively in every replica, with a replica killed before the first window, at a window's
creation, between epochs, inside an epoch (after some of its operations were sent), at the fence that applies them,
and at the free; a PSCW ring (tests/programs/pscw_ring.c: halos Put into MPI_Win_allocate windows, Accumulates and
Gets into an MPI_Win_create window, each rank posting to its left neighbour and starting to its right) prints what it
prints natively in every replica, with replicas killed at the windows' creation, between epochs, inside an access
epoch, at MPI_Win_complete, MPI_Win_wait and MPI_Win_test; the one-sided calls SDR does not replicate stop the job
naming the call and why."""

from __future__ import annotations

import re

import pytest

from tests.conftest import echorun
from tests.preload.test_sdr import assert_survivors_native

N = 3
# calls of rank 0 as the records number them (the same in every rank of rma_kernels at -n 3)
BEFORE, ALLOCATE, STENCIL_PUT, STENCIL_FENCE, BETWEEN = 2, 3, 22, 7, 20
CREATE, TRANSPOSE_PUT, ACCUMULATE, FETCH, GET, FREE = 47, 58, 123, 131, 126, 191
GET_ACCUMULATE, CLAIMS_FENCE = 195, 196  # claims: its MPI_Compare_and_swap is call 194
# calls of pscw_ring (3 steps) as the records number them (the same in every rank at -n 3 up to its first
# MPI_Win_test, which the program calls until the epoch is closed)
RING_ALLOCATE, RING_UNLOCK, RING_POST, RING_PUT, RING_ZERO_PUT, RING_COMPLETE = 7, 9, 10, 12, 13, 14
RING_WAIT, RING_BETWEEN, RING_FREE, RING_CREATE, RING_ACCUMULATE, RING_GET = 15, 16, 28, 29, 32, 33
RING_TALLY_COMPLETE, RING_TEST = 34, 35
TIMING = re.compile(r"\btime\b")


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced time (a timing)."""
    return [line for line in lines if not TIMING.search(line)]


def run_sdr(programs, tmp_path, program: str, kills: list[tuple[int, int, int]], replicas: int = 2):
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    return echorun(["-n", str(N), "--mode", "sdr", "--replicas", str(replicas),
                    *(["--inject", spec] if spec else []), *programs[program]], tmp_path / "run", timeout=150)


@pytest.mark.parametrize("program", ["rma_kernels", "pscw_ring"])
def test_one_sided_programs_under_sdr(mpi, programs, tmp_path, program):
    """No failure: every replica's windows end as natively, and what it fetched (each program validates its own
    results: the ring its halos, tallies and fetched stamps step by step)."""
    r = run_sdr(programs, tmp_path, program, [])
    assert_survivors_native(mpi, programs, r, N, 2, program, timeless)
    assert "validated" in r.stdout and "FAILED" not in r.stdout
    assert "lost replica" not in r.stderr


KERNEL_KILLS = [
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
]
RING_KILLS = [
    [(1, 1, RING_ALLOCATE)],           # at MPI_Win_allocate
    [(2, 0, RING_UNLOCK)],             # at the MPI_Win_unlock of its own window, its ghosts cleared
    [(0, 0, RING_POST)],               # at the first MPI_Win_post: its window made, no epoch yet
    [(2, 1, RING_PUT)],                # inside an access epoch: started, nothing sent
    [(1, 0, RING_ZERO_PUT)],           # inside an access epoch: its halo Put sent, its count not
    [(0, 1, RING_COMPLETE)],           # at MPI_Win_complete: both Puts sent; its target waits for its count
    [(2, 0, RING_WAIT)],               # at MPI_Win_wait: its epoch completed, its own exposure not closed
    [(1, 1, RING_BETWEEN)],            # between epochs
    [(0, 0, RING_FREE)],               # at MPI_Win_free
    [(2, 1, RING_CREATE)],             # at MPI_Win_create
    [(1, 0, RING_ACCUMULATE)],         # inside an epoch of an Accumulate: it must count once in every replica
    [(0, 1, RING_GET)],                # its Accumulate sent, its Get not: the target must not wait for it
    [(2, 0, RING_TALLY_COMPLETE)],     # at the MPI_Win_complete that awaits its Get's answer
    [(1, 1, RING_TEST)],               # at the first MPI_Win_test
    [(0, 1, RING_ZERO_PUT), (2, 0, RING_GET)],  # one rank in the halo epoch, another in the tally
]


@pytest.mark.parametrize(("program", "kills"), [("rma_kernels", kills) for kills in KERNEL_KILLS] +
                         [("pscw_ring", kills) for kills in RING_KILLS])
def test_one_sided_programs_with_replicas_killed(mpi, programs, tmp_path, program, kills):
    r = run_sdr(programs, tmp_path, program, kills)
    assert_survivors_native(mpi, programs, r, N, 2, program, timeless)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


def test_pscw_ring_with_three_replicas_and_two_kills_in_one_rank(mpi, programs, tmp_path):
    """Two replicas of one rank die, one inside an access epoch, the other at the wait of a later one."""
    r = run_sdr(programs, tmp_path, "pscw_ring", [(1, 0, RING_ZERO_PUT), (1, 2, RING_WAIT + 6)], replicas=3)
    assert_survivors_native(mpi, programs, r, N, 3, "pscw_ring", timeless)
    assert "SDR: rank 1 lost replicas 0, 2 and finished in replica 1" in r.stderr, r.stderr


@pytest.mark.parametrize(("program", "named"), [
    ("rma", "MPI_Win_lock (passive target: SDR replicates active-target epochs, MPI_Win_fence and "
            "MPI_Win_post/start, and a process's lock of its own window only) is not supported in SDR mode"),
    ("shared_nosync", "MPI_Win_allocate_shared (its loads and stores into other processes' memory bypass MPI"),
    # a target datatype that covers one run of the window in another order: refused, never applied as a run
    ("rma_transpose_type", "MPI_Put with a non-contiguous target datatype (SDR's windows take a target's data as one "
                           "run) is not supported in SDR mode"),
])
def test_one_sided_calls_sdr_does_not_replicate_are_named(programs, tmp_path, program, named):
    """tests/programs/rma.c runs a fence epoch, a PSCW one, then locks another rank's window; shared_nosync.c makes
    a shared-memory window; rma_transpose_type.c Puts through a transposing target datatype."""
    r = echorun(["--no-store", "-n", "2", "--mode", "sdr", "--replicas", "2", *programs[program]], tmp_path / "run",
                timeout=120)
    assert r.returncode != 0
    assert named in r.stderr, r.stderr
