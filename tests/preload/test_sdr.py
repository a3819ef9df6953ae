"""SDR mode end to end (real ULFM runs): the battery under --mode sdr prints what it prints natively, in every
replica; replicas killed with SIGKILL at a call of a rank leave the output unchanged; losing every replica of a
rank ends the job with a message naming it."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable

import pytest

from echo.runformat.constants import EXIT_NOT_FIRED
from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native
from tests.preload.test_replication import deterministic, native

# the calls SDR replicates (docs/sdr.md): point-to-point, collectives, communicators and groups
SDR_BATTERY = ["p2p", "coll", "comms", "comm_ctors", "anysource", "nonblocking", "cxx_ring", "py_p2p", "py_coll",
               "py_comm", "pcoll"]


def replica_output(r, rank: int, k: int) -> list[str]:
    return lines_by_rank(r.stdout if k == 0 else copy_output(r.run_dir, rank, k)).get(rank, [])


def stopped(r, rank: int, k: int, n: int) -> bool:
    """Excluded as slow and stopped at the end (when noise makes a replica look slow): its output is a prefix."""
    from echo.runformat.procstatus import read_status

    end = read_status(r.run_dir, k * n + rank)
    return end is not None and end.state == "stopped"


def assert_native_output(mpi, programs, name: str, n: int, replicas: int, r) -> None:
    expected = native(mpi, programs, name, n)
    assert r.returncode == 0, r.stderr
    for rank in range(n):
        assert not all(stopped(r, rank, k, n) for k in range(replicas))
        for k in range(replicas):
            lines, want = deterministic(replica_output(r, rank, k)), deterministic(expected[rank])
            if stopped(r, rank, k, n):
                want = want[:len(lines)]
            assert lines == want, f"rank {rank} replica {k}"


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("name", SDR_BATTERY)
def test_battery_under_sdr(mpi, programs, tmp_path, name, n):
    r = echorun(["-n", str(n), "--mode", "sdr", "--replicas", "2", *programs[name]], tmp_path / "run")
    assert_native_output(mpi, programs, name, n, 2, r)
    assert "8 processes" in r.stderr if n == 4 else True


def test_worlds_that_serve_large_requests_in_different_orders_go_on(mpi, programs, tmp_path):
    """Rank 0 answers whichever worker asked first (MPI_ANY_SOURCE) with 1 MiB, too large to be copied when sent:
    the two worlds serve their workers in different orders, and each world's send waited for an ack that the other
    world gives only after its own such wait (the job hung for ever, as MPICH's pt2pt/probe_unexp did)."""
    r = echorun(["-n", "4", "--mode", "sdr", "--replicas", "2", *programs["first_come"]], tmp_path / "run",
                timeout=90)
    assert_native_output(mpi, programs, "first_come", 4, 2, r)


@pytest.mark.parametrize("call", [31, 100])
def test_the_server_of_large_blocks_killed(mpi, programs, tmp_path, call):
    """Sends copied late go again from their copies: rank 0's replica 0 killed while serving, its other replica
    serves the workers of world 0 what they had not acked, in the order each worker expects."""
    r = echorun(["-n", "4", "--mode", "sdr", "--replicas", "2", "--inject", f"kill:rank=0,replica=0,call={call}",
                 *programs["first_come"]], tmp_path / "run", timeout=90)
    assert "rank 0 lost replica 0" in r.stderr, r.stderr
    assert_survivors_native(mpi, programs, r, 4, 2, "first_come")


def test_padding_of_long_doubles_arrives_as_a_native_send_delivers_it(mpi, programs, tmp_path):
    """A small send goes from echo's packed copy: Open MPI's MPI_Pack of a strided MPI_LONG_DOUBLE vector copies
    the 10 bytes of each value and not the 6 of padding its send carries, so the receiver's memcmp with the
    sender's bytes found 48 of 128 bytes different where natively none are (MPICH's datatype/sendrecvt2).  A
    gather's own block, copied through MPI_Pack and MPI_Unpack, lost them too, and so did a column a rank sent
    itself (Open MPI's receive of packed bytes into the strided type writes 10 of each 16).  The long double int
    pairs and the struct with holes print what a native send delivers too."""
    r = echorun(["-n", "2", "--mode", "sdr", *programs["padded_types"]], tmp_path / "run")
    assert_native_output(mpi, programs, "padded_types", 2, 2, r)
    assert "column of long doubles: 0 of 128 bytes differ" in r.stdout, r.stdout
    assert "gathered columns: 0 of 256 bytes differ" in r.stdout, r.stdout
    assert "r1: own column through MPI: 0 of 128 bytes differ" in r.stdout, r.stdout


def test_a_struct_type_over_an_unmapped_page_is_sent_whole(mpi, programs, tmp_path):
    """Two arrays sent as one struct type with a page between them that is not mapped: SDR's copy of a small send
    is the memory its data lies in when that is not much more than its data, and reading that span killed the
    sender with SIGSEGV; a span on pages never mapped is packed instead."""
    r = echorun(["-n", "2", "--mode", "sdr", *programs["split_arrays"]], tmp_path / "run")
    assert_native_output(mpi, programs, "split_arrays", 2, 2, r)


@pytest.mark.parametrize("name", ["coll", "nonblocking", "comms", "comm_ctors"])
def test_three_replicas(mpi, programs, tmp_path, name):
    r = echorun(["-n", "2", "--mode", "sdr", "--replicas", "3", *programs[name]], tmp_path / "run")
    assert_native_output(mpi, programs, name, 2, 3, r)


def assert_survivors_native(mpi, programs, r, n: int, replicas: int, name: str = "sdr_stencil",
                            compared: Callable[[list[str]], list[str]] = list) -> None:
    """Every replica that finished printed the native output (the lines `compared` keeps); every rank finished in
    some replica."""
    from echo.runformat.procstatus import read_status

    assert r.returncode == 0, r.stderr
    expected = native(mpi, programs, name, n)
    first = lines_by_rank(r.stdout)
    for rank in range(n):
        finished = [k for k in range(replicas)
                    if (end := read_status(r.run_dir, k * n + rank)) and end.state == "finalized"]
        assert finished, f"rank {rank} finished in no replica"
        for k in finished:
            lines = first.get(rank, []) if k == 0 else lines_by_rank(copy_output(r.run_dir, rank, k)).get(rank, [])
            assert compared(lines) == compared(expected[rank]), f"rank {rank} replica {k}"


@pytest.mark.parametrize("seed", range(4))
def test_a_replica_killed_at_a_random_call(mpi, programs, tmp_path, seed):
    """SIGKILL of one replica of a random rank at a random MPI call (seeded: a failure can be replayed)."""
    rng = random.Random(seed)
    rank, replica, call = rng.randrange(3), rng.randrange(2), rng.randrange(20, 400)
    r = echorun(["-n", "3", "--mode", "sdr", "--inject", f"kill:rank={rank},replica={replica},call={call}",
                 *programs["sdr_stencil"]], tmp_path / "run")
    assert_survivors_native(mpi, programs, r, 3, 2)
    assert f"SDR: rank {rank} lost replica {replica}" in r.stderr


def test_kills_in_every_rank_with_three_replicas(mpi, programs, tmp_path):
    """Repeated failures: two replicas of rank 0 and one of every other rank die at different calls."""
    kills = "kill:rank=0,replica=0,call=60;kill:rank=0,replica=2,call=250;kill:rank=1,replica=1,call=120;" \
            "kill:rank=2,replica=2,call=180"
    r = echorun(["-n", "3", "--mode", "sdr", "--replicas", "3", "--inject", kills, *programs["sdr_stencil"]],
                tmp_path / "run")
    assert_survivors_native(mpi, programs, r, 3, 3)
    assert "SDR: rank 0 lost replicas 0, 2 and finished in replica 1" in r.stderr


@pytest.mark.parametrize("kills", ["kill:rank=1,replica=1,call=382;kill:rank=0,replica=0,call=336",
                                   "kill:rank=1,replica=0,call=148;kill:rank=0,replica=1,call=333;"
                                   "kill:rank=2,replica=1,after=0.87s"])
def test_a_rank_that_finished_is_not_lost_when_its_sibling_died(mpi, programs, tmp_path, kills):
    """Late kills of one replica of two ranks (soak seeds 63 and 99): a rank's last replica that finished and
    exited looks failed to a process still in MPI_Finalize; that is no lost rank (it ended the job with exit 75
    and 'every replica of application rank 1 failed')."""
    n = 3 if "rank=2" in kills else 2
    r = echorun(["-n", str(n), "--mode", "sdr", "--inject", kills, *programs["sdr_stencil"]], tmp_path / "run")
    assert "every replica of application rank" not in r.stderr, r.stderr
    if r.returncode == EXIT_NOT_FIRED:  # the timed kill may land after the program's end: said, exit 25
        assert "after=0.87s: never fired: the program ended" in r.stderr, r.stderr
        r = dataclasses.replace(r, returncode=0)
    assert_survivors_native(mpi, programs, r, n, 2)


@pytest.mark.parametrize("call", range(200, 208))
def test_a_split_right_after_both_ranks_lost_a_replica(mpi, programs, tmp_path, call):
    """Replica 1 of both ranks killed at the same call, around sdr_stencil's MPI_Comm_split (its 205th call at the
    default 60 iterations), as when a host holding those replicas dies: the survivors create a communicator over a
    parent whose dead members they may not have noticed yet.  Open MPI's context-id allreduce fails there; before,
    3 of 12 such runs ended with MPI_ERR_COMM in MPI_Comm_free (the failed split's NULL handle freed) and runs across
    simulated hosts crashed after 'NBC_Progress: an error 75'."""
    kills = f"kill:rank=0,replica=1,call={call};kill:rank=1,replica=1,call={call}"
    r = echorun(["-n", "2", "--mode", "sdr", "--inject", kills, *programs["sdr_stencil"]], tmp_path / "run")
    assert_survivors_native(mpi, programs, r, 2, 2)
    assert "SDR: rank 0 lost replica 1" in r.stderr and "SDR: rank 1 lost replica 1" in r.stderr


@pytest.mark.parametrize("earlier_log", [False, True])
def test_the_applications_own_abort_ends_the_job_with_its_code(mpi, programs, tmp_path, earlier_log):
    """Rank 1 starts its run log refusing to overwrite one (O_EXCL) and calls MPI_Abort(3) when it cannot.  With a
    log from an earlier run every replica of rank 1 aborts; without one, its first replica writes the log and the
    other aborts, alone (the job hung for ever: its siblings went on without it)."""
    log = tmp_path / "run.log"
    log.write_text("earlier\n")
    natively = mpirun_native(mpi, 2, [*programs["own_abort"], str(log)])
    assert natively.returncode == 3, natively.stderr
    if not earlier_log:
        log.unlink()
    r = echorun(["-n", "2", "--mode", "sdr", *programs["own_abort"], str(log)], tmp_path / "run", timeout=150)
    assert r.returncode == 3, r.stderr
    # whichever replica aborted (a replica other than 0 writes its stderr to its own file)
    assert "SDR: application rank 1 replica" in r.stderr and "called MPI_Abort with error code 3" in r.stderr, \
        r.stderr
    if earlier_log:  # no replica of rank 1 got past its abort
        assert "result" not in r.stdout


def test_every_replica_of_a_rank_killed_ends_the_job(programs, tmp_path):
    r = echorun(["-n", "3", "--mode", "sdr", "--inject", "kill:rank=1,replica=0,call=50;kill:rank=1,replica=1,call=80",
                 *programs["sdr_stencil"]], tmp_path / "run")
    assert r.returncode != 0
    assert "every replica of application rank 1 failed (2 of 2)" in r.stderr
    assert "--replicas" in r.stderr


@pytest.mark.parametrize("kill", [None, "kill:rank=1,replica=0,call=50"])
def test_exit_status_is_the_applications(programs, tmp_path, kill):
    """Every rank returns 3 from main after MPI_Finalize: echorun says 3 (the replicas that finished returned it),
    with or without a replica killed on the way."""
    r = echorun(["-n", "3", "--mode", "sdr", *(["--inject", kill] if kill else []), *programs["exit_status"], "3"],
                tmp_path / "run")
    assert r.returncode == 3, r.stderr
    assert "SDR: application rank" in r.stderr and "exited with status 3: the application's status" in r.stderr
    assert ("SDR: rank 1 lost replica 0 and finished in replica 1" in r.stderr) == bool(kill)
    assert "application exited with status 3" in r.stderr


def test_exit_status_of_one_rank(programs, tmp_path):
    """Only rank 2 returns 3 (in both replicas): the job's status is 3, and echorun names a replica of rank 2."""
    r = echorun(["-n", "3", "--mode", "sdr", *programs["exit_status"], "3", "2"], tmp_path / "run")
    assert r.returncode == 3, r.stderr
    assert "SDR: application rank 2 replica" in r.stderr and "lost replica" not in r.stderr


def test_unsupported_call_is_named(programs, tmp_path):
    r = echorun(["-n", "2", "--mode", "sdr", *programs["rma"]], tmp_path / "run")
    assert r.returncode != 0
    assert "is not supported in SDR mode" in r.stderr


def test_a_call_refused_on_one_rank_ends_the_job(programs, tmp_path):
    """Rank 0 makes a call SDR refuses while the others compute: the job ends soon after (echorun kills what is
    left: MPI_Abort is not used under ULFM, and mpirun does not end the others), naming the call."""
    t0 = time.monotonic()
    r = echorun(["--no-store", "-n", "3", "--mode", "sdr", "--replicas", "2", *programs["refused_alone"]],
                tmp_path / "run", timeout=120)
    assert r.returncode != 0
    assert "MPI_Intercomm_create over MPI_COMM_SELF (a communicator SDR does not replicate) is not supported in SDR " \
           "mode" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 100, "the job waited for the others' computation"


def test_python_replica_killed_by_time(mpi, programs, tmp_path):
    """mpi4py under SDR: one replica killed 0.4 s after MPI_Init (by time, not call); the output stays native."""
    from echo.runformat.procstatus import read_status

    r = echorun(["-n", "3", "--mode", "sdr", "--inject", "kill:rank=2,replica=0,after=0.4s",
                 *programs["py_sdr_loop"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "SDR: rank 2 lost replica 0" in r.stderr
    expected = native(mpi, programs, "py_sdr_loop", 3)
    for rank in range(3):
        for k in range(2):
            end = read_status(r.run_dir, k * 3 + rank)
            if end and end.state == "finalized":
                lines = lines_by_rank(r.stdout).get(rank, []) if k == 0 else \
                    lines_by_rank(copy_output(r.run_dir, rank, k)).get(rank, [])
                assert lines == expected[rank], (rank, k)


# ---- slow replicas excluded (preload/sdr/echo_sdr_slow.c) ----

def exclusion_events(run_dir, rank: int | None = None, replica: int | None = None) -> list[tuple[str, int, int, int]]:
    """One replica's exclusions (all with no rank given): on shared cores noise may exclude others for a while."""
    from echo.modes.sdr import exclusions

    return [(e.what, e.rank, e.replica, e.call) for e in exclusions(run_dir)
            if rank is None or (e.rank, e.replica) == (rank, replica)]


def assert_outputs_native_or_prefix(r, expected: dict[int, list[str]], n: int, replicas: int) -> None:
    """Every replica's output is the native one, or a prefix of it for one stopped at the end as slow."""
    for rank in range(n):
        for k in range(replicas):
            lines, want = replica_output(r, rank, k), expected[rank]
            assert lines == (want[:len(lines)] if stopped(r, rank, k, n) else want), f"rank {rank} replica {k}"


def test_a_slowed_replica_is_excluded_and_taken_back(mpi, programs, tmp_path):
    """Replica 1 of rank 0, 8x slower up to its 200th call: excluded within a few rounds (16 calls each; two
    judged rounds above the threshold), taken back after the slowdown once it has caught up (the program's
    even ranks wait for the odd ones each iteration: the excluded one, finding its messages there, catches up),
    and its output complete: what it missed was skipped by its peers' acks, not lost."""
    r = echorun(["-n", "2", "--mode", "sdr", "--replicas", "2", "--exclude-slow", "2",
                 "--inject", "slow:rank=0,copy=1,factor=8,to=200", *programs["sdr_slow"], "1500"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    events = exclusion_events(r.run_dir, 0, 1)
    assert [e[0] for e in events[:2]] == ["out", "in"], events
    assert events[0][3] <= 6 * 16, "excluded within a few rounds of the slowdown"
    assert events[1][3] > 200, "taken back after the slowdown ended"
    assert "rank 0 replica 1 excluded as slow" in r.stderr and "rank 0 replica 1 taken back" in r.stderr
    expected = lines_by_rank(mpirun_native(mpi, 2, [*programs["sdr_slow"], "1500"]).stdout)
    if len(events) == 2:  # (noise on shared cores may exclude it again later: then it may be stopped)
        assert replica_output(r, 0, 1) == expected[0], "taken back, it printed all"
    assert_outputs_native_or_prefix(r, expected, 2, 2)


def test_a_replica_slow_to_the_end_is_stopped(mpi, programs, tmp_path):
    """Slow throughout: excluded, never taken back, stopped when its siblings finish (nobody waits for it); the
    job succeeds with every other replica's output native and the stopped one's a prefix of it."""
    from echo.runformat.procstatus import read_status

    r = echorun(["-n", "2", "--mode", "sdr", "--replicas", "2", "--exclude-slow", "2",
                 "--inject", "slow:rank=1,copy=0,factor=8", *programs["sdr_slow"], "400"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert [e[0] for e in exclusion_events(r.run_dir, 1, 0)] == ["out", "stopped"], exclusion_events(r.run_dir)
    assert read_status(r.run_dir, 1).state == "stopped"
    assert "rank 1's output after replica 0 was stopped is in" in r.stderr
    expected = lines_by_rank(mpirun_native(mpi, 2, [*programs["sdr_slow"], "400"]).stdout)
    assert_outputs_native_or_prefix(r, expected, 2, 2)
    assert replica_output(r, 1, 1) == expected[1], "the rank's whole output is in its other replica"


def test_exclusion_off_waits_for_the_slow_replica(programs, tmp_path):
    """--exclude-slow 0: the same slowdown excludes nobody; every replica finishes."""
    from echo.runformat.procstatus import read_status

    r = echorun(["-n", "2", "--mode", "sdr", "--replicas", "2", "--exclude-slow", "0",
                 "--inject", "slow:rank=1,copy=0,factor=8", *programs["sdr_slow"], "200"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert exclusion_events(r.run_dir) == []
    assert all(read_status(r.run_dir, real).state == "finalized" for real in range(4))


def test_a_plan_longer_than_any_fixed_table_reaches_every_process(mpi, programs, tmp_path):
    """The library reads every line of the plan: 40 kill injections (with the plan's own keys, more than the 32
    lines an earlier reader kept); only the last one fires, so the job shows it was read. Its victim's records
    hold every call before the kill (SIGKILL runs no handler)."""
    from echo.runformat.procstatus import read_status
    from echo.runformat.records import read

    never = [f"kill:rank=0,replica=1,call={10**9 + i}" for i in range(39)]
    r = echorun(["-n", "3", "--mode", "sdr", "--inject", ";".join([*never, "kill:rank=1,replica=1,call=30"]),
                 *programs["sdr_stencil"]], tmp_path / "run")
    plan = (tmp_path / "run" / "plan").read_text().splitlines()
    assert len([line for line in plan if not line.startswith("proc ")]) > 45
    end = read_status(r.run_dir, 1 * 3 + 1)
    assert end is not None and end.state == "started", "the 40th injection fired (SIGKILL: no MPI_Finalize)"
    assert r.returncode == EXIT_NOT_FIRED, r.stderr  # the planned kills past the end never fire, said
    assert_survivors_native(mpi, programs, dataclasses.replace(r, returncode=0), 3, 2)
    f = read(r.run_dir / "records" / "4.rec")
    assert f.damage is None and len(f.records) == 30, "calls 0..29 recorded (0: MPI_Init); call 30 was the kill"
