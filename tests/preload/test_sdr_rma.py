"""One-sided communication under SDR (preload/sdr/echo_sdr_win.c), real ULFM runs: PRK-style one-sided kernels
(tests/programs/rma_kernels.c: a stencil whose halos are Put into MPI_Win_allocate windows, a transpose Put into an
MPI_Win_create window, Accumulate/Get/Fetch_and_op tallies, Compare_and_swap/Get_accumulate claims; fence epochs)
print what they print natively in every replica, with a replica killed before the first window, at a window's
creation, between epochs, inside an epoch (after some of its operations were sent), at the fence that applies them,
and at the free; a PSCW ring (tests/programs/pscw_ring.c: halos Put into MPI_Win_allocate windows, Accumulates and
Gets into an MPI_Win_create window, each rank posting to its left neighbour and starting to its right) prints what it
prints natively in every replica, with replicas killed at the windows' creation, between epochs, inside an access
epoch, at MPI_Win_complete, MPI_Win_wait and MPI_Win_test; the one-sided calls SDR does not replicate stop the job
naming the call and why.  A work queue on passive-target epochs (tests/programs/passive_queue.c: tasks taken with
MPI_Fetch_and_op under shared locks, running sums read and written back under exclusive locks, Accumulates, Puts
under MPI_Win_lock_all with flushes, a Compare_and_swap) validates its own results and takes the same tasks in every
replica of a rank, with replicas killed at a window's creation, inside lock epochs (the counter's own replicas
among them, one after the other with three replicas) and between them."""

from __future__ import annotations

import re

import pytest

from tests.conftest import copy_output, echorun, lines_by_rank
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


# calls of passive_queue as the records number them (the same in every rank up to its task loop, whose
# iterations are 11 calls each: lock, Fetch_and_op, unlock; exclusive lock, Get, flush, Put, unlock; lock,
# Accumulate, unlock; how many a rank makes depends on how many tasks it took)
Q_ALLOCATE, Q_SELF_UNLOCK, Q_CREATE, Q_LOOP = 3, 5, 6, 8
Q_FETCH, Q_FLUSH, Q_PUT, Q_UNLOCK_EXCLUSIVE, Q_UNLOCK_SHARED = Q_LOOP + 1, Q_LOOP + 5, Q_LOOP + 6, Q_LOOP + 7, \
    Q_LOOP + 10
ORDER = re.compile(r"\border:")


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced time (a timing)."""
    return [line for line in lines if not TIMING.search(line)]


def timeless_orderless(lines: list[str]) -> list[str]:
    """The program's lines but its time and those that depend on which origin reached a target first."""
    return [line for line in timeless(lines) if not ORDER.search(line)]


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
    # its fence, PSCW and passive-target epochs run; then its request-based operations
    ("rma", "MPI_Rput (request-based: SDR completes passive-target operations at MPI_Win_flush and MPI_Win_unlock "
            "only) is not supported in SDR mode"),
    ("shared_nosync", "MPI_Win_allocate_shared (its loads and stores into other processes' memory bypass MPI"),
    # a target datatype that covers one run of the window in another order: refused, never applied as a run
    ("rma_transpose_type", "MPI_Put with a non-contiguous target datatype (SDR's windows take a target's data as one "
                           "run) is not supported in SDR mode"),
])
def test_one_sided_calls_sdr_does_not_replicate_are_named(programs, tmp_path, program, named):
    """tests/programs/rma.c runs a fence epoch, a PSCW one, lock epochs, then an MPI_Rput; shared_nosync.c makes
    a shared-memory window; rma_transpose_type.c Puts through a transposing target datatype."""
    r = echorun(["--no-store", "-n", "2", "--mode", "sdr", "--replicas", "2", *programs[program]], tmp_path / "run",
                timeout=120)
    assert r.returncode != 0
    assert named in r.stderr, r.stderr


def assert_replicas_took_the_same_tasks(r, replicas: int) -> None:
    """The tasks a rank took (who reached the counter first) are the same in each replica that finished: the
    target's replicas applied its origins' Fetch_and_ops in one order."""
    from echo.runformat.procstatus import read_status

    first = lines_by_rank(r.stdout)
    for rank in range(N):
        orders = []
        for k in range(replicas):
            end = read_status(r.run_dir, k * N + rank)
            if end and end.state == "finalized":
                lines = first.get(rank, []) if k == 0 else lines_by_rank(copy_output(r.run_dir, rank, k)).get(rank, [])
                orders.append([line for line in lines if ORDER.search(line)])
        assert orders and all(o == orders[0] and len(o) == 1 for o in orders), (rank, orders)


PASSIVE_KILLS = [
    [],
    [(0, 0, Q_ALLOCATE)],              # the counter's rank, at MPI_Win_allocate
    [(1, 1, Q_SELF_UNLOCK)],           # at the unlock of its own window, its memory cleared under the lock
    [(2, 0, Q_CREATE)],                # at MPI_Win_create
    [(0, 0, Q_FETCH)],                 # the counter's leader replica, at its own first Fetch_and_op
    [(0, 1, Q_FETCH + 11)],            # the counter's other replica, inside a shared epoch
    [(1, 1, Q_FLUSH)],                 # inside an exclusive epoch: its Get sent, its flush not
    [(2, 0, Q_PUT), (1, 0, Q_UNLOCK_EXCLUSIVE)],  # inside an exclusive epoch, and at its unlock
    [(2, 1, Q_UNLOCK_SHARED)],         # its Accumulate sent, the epoch not closed
    [(1, 0, Q_LOOP + 22)],             # between epochs: before its third task's lock
]


@pytest.mark.parametrize("kills", PASSIVE_KILLS)
def test_passive_target_work_queue_with_replicas_killed(mpi, programs, tmp_path, kills):
    r = run_sdr(programs, tmp_path, "passive_queue", kills)
    assert_survivors_native(mpi, programs, r, N, 2, "passive_queue", timeless_orderless)
    assert_replicas_took_the_same_tasks(r, 2)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


def test_passive_target_work_queue_with_the_counters_replicas_killed_in_turn(mpi, programs, tmp_path):
    """Three replicas: the replica that orders the counter's events dies, then the one that took over."""
    r = run_sdr(programs, tmp_path, "passive_queue", [(0, 0, Q_FETCH), (0, 1, Q_FETCH + 33)], replicas=3)
    assert_survivors_native(mpi, programs, r, N, 3, "passive_queue", timeless_orderless)
    assert_replicas_took_the_same_tasks(r, 3)
    assert "SDR: rank 0 lost replicas 0, 1 and finished in replica 2" in r.stderr, r.stderr
