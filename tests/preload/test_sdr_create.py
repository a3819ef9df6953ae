"""Group-collective and nonblocking communicator creation under SDR (preload/sdr/echo_sdr_comm.c and
echo_sdr_idup.c), real ULFM runs.
A code whose particle-holding ranks make their own communicator with MPI_Comm_create_group (tests/programs/
create_group.c: at -n 4 every rank holds particles, so the group is all of MPI_COMM_WORLD, in reverse order; with
"even", the even ranks only) prints what it prints natively in every replica, with a replica killed before, at and
after the creation; so does one that makes its communicator from a group with MPI_Comm_create_from_group
(tests/programs/from_group.c), one whose two halves make theirs at the same time (group_halves.c), and codes that
overlap MPI_Comm_idup(_with_info) with their computation, poll it with MPI_Test, test it before sends the others
wait for, or start it before a blocking call another rank needs first (idup_overlap.c, idup_poll.c,
idup_test_then_send.c, idup_staggered.c).  Few kill points each (the module must stay short in CI): at the creation,
and while the background duplication is under way."""

from __future__ import annotations

from pathlib import Path

import pytest

from echo.runformat.procstatus import read_status
from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native
from tests.preload.test_sdr import assert_survivors_native

N = 4
CREATE = FROM_GROUP = 6  # the calls (numbered as the records number them) of MPI_Comm_create_group and _from_group


def timeless(lines: list[str]) -> list[str]:
    """The program's lines but its reduced step time (a timing)."""
    return [line.split(", step time")[0] for line in lines]


# create_group.c: MPI_Comm_create_group is call 6 (every call numbered as the records number them)
def test_a_group_of_every_rank_with_its_leader_and_another_rank_killed_at_the_creation(mpi, programs, tmp_path):
    kills = [(3, 0, CREATE), (2, 1, CREATE)]
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *kill_spec(kills), *programs["create_group"]],
                tmp_path / "run", timeout=120)
    assert_survivors_native(mpi, programs, r, N, 2, "create_group", timeless)
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr


def test_a_communicator_from_the_worlds_group_with_a_member_killed_at_it(mpi, programs, tmp_path):
    """MPI_Comm_create_from_group of every rank (MPI-4, no parent)."""
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *kill_spec([(0, 0, FROM_GROUP)]),
                 *programs["from_group"]], tmp_path / "run", timeout=120)
    assert_survivors_native(mpi, programs, r, N, 2, "from_group")
    assert "SDR: rank 0 lost replica 0" in r.stderr, r.stderr


def kill_spec(kills: list[tuple[int, int, int]]) -> list[str]:
    spec = ";".join(f"kill:rank={rank},replica={k},call={call}" for rank, k, call in kills)
    return ["--inject", spec] if kills else []


NATIVE: dict[tuple[str, ...], dict[int, list[str]]] = {}  # a program's native lines by rank, run once per module


def native_lines(mpi, cmd: list[str]) -> dict[int, list[str]]:
    if tuple(cmd) not in NATIVE:
        native = mpirun_native(mpi, N, cmd)
        assert native.returncode == 0, native.stderr
        NATIVE[tuple(cmd)] = lines_by_rank(native.stdout)
    return NATIVE[tuple(cmd)]


def assert_every_survivor_prints_native(mpi, programs, program: str, args: list[str], tmp_path: Path,
                                        kills: list[tuple[int, int, int]], compared=list) -> None:
    """The program (with its arguments) under SDR with these kills: the job succeeds, each kill is reported, every
    rank finished in some replica, and every replica that finished printed what the native run prints."""
    expected = native_lines(mpi, [*programs[program], *args])
    r = echorun(["-n", str(N), "--mode", "sdr", "--replicas", "2", *kill_spec(kills), *programs[program], *args],
                tmp_path / "run", timeout=120)
    assert r.returncode == 0, r.stderr
    for rank, k, _ in kills:
        assert f"SDR: rank {rank} lost replica {k}" in r.stderr, r.stderr
    first = lines_by_rank(r.stdout)
    for rank in range(N):
        finished = [k for k in range(2) if (end := read_status(r.run_dir, k * N + rank)) and end.state == "finalized"]
        assert finished, f"rank {rank} finished in no replica"
        for k in finished:
            lines = first.get(rank, []) if k == 0 else lines_by_rank(copy_output(r.run_dir, rank, k)).get(rank, [])
            assert compared(lines) == compared(expected.get(rank, [])), f"rank {rank} replica {k}: {r.stderr}"


# create_group.c even: ranks 2 (the leader: the busiest first) and 0 call MPI_Comm_create_group, at call 6
@pytest.mark.parametrize("kills", [
    [],
    [(2, 0, CREATE)],               # the leader, at the creation
    [(0, 1, CREATE), (1, 0, CREATE)],  # the other member at the creation, and a rank outside the group meanwhile
])
def test_a_group_of_the_even_ranks_with_replicas_killed(mpi, programs, tmp_path, kills):
    """Only the even ranks call MPI_Comm_create_group (refused before: only its members would agree)."""
    assert_every_survivor_prints_native(mpi, programs, "create_group", ["even"], tmp_path, kills, timeless)


# group_halves.c: the even and the odd ranks each make theirs, with the same tag, at call 5
@pytest.mark.parametrize("kills", [[(1, 0, 5), (2, 1, 5)]])
def test_both_halves_make_their_own_communicator_at_once_with_replicas_killed(mpi, programs, tmp_path, kills):
    assert_every_survivor_prints_native(mpi, programs, "group_halves", [], tmp_path, kills)


@pytest.mark.parametrize("kills", [[], [(0, 0, FROM_GROUP), (3, 1, FROM_GROUP)]])
def test_a_communicator_from_the_even_ranks_group_with_replicas_killed(mpi, programs, tmp_path, kills):
    """MPI_Comm_create_from_group of the even ranks only (refused before): the member that is not the leader and
    an odd rank at it."""
    assert_every_survivor_prints_native(mpi, programs, "from_group", ["even"], tmp_path, kills)


# idup_overlap.c: MPI_Comm_rank 1, MPI_Comm_idup 2, MPI_Comm_rank 3, MPI_Wait 4, MPI_Allreduce on the dup 5
@pytest.mark.parametrize("kills", [[(2, 0, 2), (3, 1, 4)]])
def test_a_duplicate_made_while_the_code_computes_with_replicas_killed(mpi, programs, tmp_path, kills):
    """MPI_Comm_idup, overlapped with the code's setup and completed by MPI_Wait (refused before): one rank killed
    at it, another at its MPI_Wait, while the others' duplication is under way."""
    assert_every_survivor_prints_native(mpi, programs, "idup_overlap", [], tmp_path, kills)


# idup_poll.c: MPI_Comm_idup_with_info is call 5, then MPI_Test from call 7 on (as many as it takes: in the background
# the duplicate is made while the code polls), MPI_Ibarrier, MPI_Waitall, the ring on the dup
@pytest.mark.parametrize("kills", [[], [(1, 1, 5)], [(1, 0, 12), (2, 1, 9)]])
def test_a_duplicate_with_hints_polled_with_test_with_replicas_killed(mpi, programs, tmp_path, kills):
    """MPI_Comm_idup_with_info polled by MPI_Test, completed in an MPI_Waitall with a nonblocking barrier (refused
    before; then its MPI_Test made the duplicate and waited for every member, and hung), then a ring and a
    reduction on the duplicate: killed at it, and two ranks while they poll."""
    assert_every_survivor_prints_native(mpi, programs, "idup_poll", [], tmp_path, kills)


# idup_staggered.c: the workers' MPI_Comm_idup is call 3, then MPI_Ssend 4, MPI_Wait 5; the manager's MPI_Recv 3..5,
# MPI_Comm_idup 6, MPI_Wait 7; then MPI_Allreduce on the duplicate
@pytest.mark.parametrize("kills", [[], [(0, 1, 6), (3, 0, 5)]])
def test_a_duplicate_the_manager_starts_after_the_workers_reports_with_replicas_killed(mpi, programs, tmp_path, kills):
    """The workers' MPI_Comm_idup returns before the manager calls its own, which comes after their synchronous
    sends (made at the call, the duplicate waited for ever; refused before): the manager killed at its idup and a
    worker at its MPI_Wait."""
    assert_every_survivor_prints_native(mpi, programs, "idup_staggered", [], tmp_path, kills)


# idup_test_then_send.c: MPI_Comm_idup is call 3; rank 0's MPI_Test 4, then its sends; the workers' MPI_Recv 4,
# MPI_Wait 5
@pytest.mark.parametrize("kills", [[], [(0, 1, 4), (2, 0, 5)]])
def test_a_duplicate_tested_before_the_sends_its_workers_wait_for_with_replicas_killed(mpi, programs, tmp_path,
                                                                                     kills):
    """Rank 0 checks its MPI_Comm_idup once with MPI_Test, then sends the workers the work they wait for before
    their own completion: the MPI_Test must not wait for them (made there, it did, and the job hung); the
    coordinator killed at its MPI_Test and a worker at its MPI_Wait."""
    assert_every_survivor_prints_native(mpi, programs, "idup_test_then_send", [], tmp_path, kills)
