"""Planning SDR mode: the process layout the library relies on, ULFM on the command line, and bad options
named with their fix (no MPI runs here: tests/preload/test_sdr.py runs the jobs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from echo.families import OPEN_MPI_5
from echo.modes.sdr import SdrError, exclusion_lines, exclusions, parse_kills, verdict
from echo.plan import Machine, Options, make_plan

MACHINE = Machine(mpirun="/x/mpirun", family=OPEN_MPI_5, cores=2, is_root=True, library="/c/libecho.so")


def plan(**kw):  # noqa: ANN201
    return make_plan(Options(program=("./app",), nranks=kw.pop("nranks", 3), mode="sdr", **kw), MACHINE)


def test_replica_k_of_rank_a_is_real_rank_k_times_n_plus_a():
    p = plan(replicas=3)
    assert [(q.real, q.app, q.copy, q.role) for q in p.procs][:4] == [
        (0, 0, 0, "replica"), (1, 1, 0, "replica"), (2, 2, 0, "replica"), (3, 0, 1, "replica")]
    assert p.nprocs == 9
    assert "mode sdr" in p.text.splitlines()
    assert p.argv[p.argv.index("--with-ft") + 1] == "ulfm"


@pytest.mark.parametrize(("kw", "message"), [
    ({"clones": "2"}, "not --clones"),
    ({"replicas": 1}, "2 to 8 replicas"),
    ({"replicas": 9}, "2 to 8 replicas"),
    ({"sdc": "detect"}, "does not combine with --sdc"),
    ({"perturb": "rounding"}, "does not combine with --perturb"),
])
def test_options_sdr_cannot_honour(kw, message):
    with pytest.raises(SdrError, match=message):
        plan(**kw)


def test_kill_specs():
    assert parse_kills("kill:rank=1,replica=0,call=40;kill:rank=2,replica=1,after=1.5s", 3, 2) == [
        "sdr_kill_0 1 0 call 40", "sdr_kill_1 2 1 after 1.5"]
    for bad, why in [("kill:rank=3,replica=0,call=1", "rank 3 does not exist"),
                     ("kill:rank=0,replica=2,call=1", "replica 2 does not exist"),
                     ("kill:rank=0,replica=0,call=0", "call must be >= 1"),
                     ("kill:rank=0,call=5", "expected kill:rank=R,replica=K"),
                     ("kill:rank=0,replica=0,call=5,after=1s", "expected kill:rank=R,replica=K")]:
        with pytest.raises(SdrError, match=why):
            parse_kills(bad, 3, 2)


def _status(run_dir: Path, real: int, state: str, exit: str = "-", sig: int = 0, at: float = 0) -> None:
    """As preload/core/echo_status.c writes it: "<state> <signal> <time> <pid> <exit>"."""
    (run_dir / "procs").mkdir(parents=True, exist_ok=True)
    (run_dir / "procs" / f"{real}.status").write_text(f"{state} {sig} {at} {100 + real} {exit}\n")


def test_verdict_a_rank_that_finished_in_one_replica_is_a_success(tmp_path):
    for real, state in enumerate(["finalized", "started", "finalized", "finalized"]):  # rank 1 lost replica 0
        _status(tmp_path, real, state)
    out = verdict(tmp_path, 2, 2, rc=137)
    assert out.status == 0
    assert "SDR: rank 1 lost replica 0 and finished in replica 1" in out.lines
    assert any("rank1.copy1.out" in line for line in out.lines)


def test_verdict_a_rank_lost_in_every_replica_fails(tmp_path):
    for real, state in enumerate(["finalized", "started", "finalized", "signal"]):
        _status(tmp_path, real, state)
    out = verdict(tmp_path, 2, 2, rc=0)
    assert out.status != 0 and "ranks [1]" in out.lines[-1]


def test_verdict_without_deaths_is_mpiruns(tmp_path):
    for real in range(4):
        _status(tmp_path, real, "finalized")
    assert verdict(tmp_path, 2, 2, rc=3).status == 3


def test_verdict_is_the_applications_exit_status_after_a_kill(tmp_path):
    """Replica 0 of rank 1 was killed; the others returned 3 from main: the job's status is 3, not 0."""
    for real, (state, code, at) in enumerate([("finalized", "3", 5.2), ("started", "-", 1.0), ("finalized", "3", 5.1),
                                              ("finalized", "3", 5.3)]):
        _status(tmp_path, real, state, code, at=at)
    out = verdict(tmp_path, 2, 2, rc=0)
    assert out.status == 3
    assert "SDR: rank 1 lost replica 0 and finished in replica 1" in out.lines
    assert out.lines[-1].startswith("SDR: application rank 0 replica 1 exited with status 3")  # the first to exit


def test_verdict_processes_mpirun_ended_after_a_failure_are_not_lost_replicas(tmp_path):
    """Rank 0 replica 0 returned 3 and mpirun ended the rest: one in MPI_Finalize (SIGTERM), one killed before
    it wrote its exit status. No replica was lost: the status is 3, and no "lost" line misleads."""
    _status(tmp_path, 0, "finalized", "3", at=7.0)
    _status(tmp_path, 1, "finalizing", sig=15)
    _status(tmp_path, 2, "finalized", "3", at=7.5)
    _status(tmp_path, 3, "finalized")
    out = verdict(tmp_path, 2, 2, rc=3)
    assert out.status == 3
    assert not any("lost" in line for line in out.lines), out.lines


def test_verdict_a_replica_killed_in_finalize_without_failure_is_lost(tmp_path):
    """No process failed: one that died in MPI_Finalize did not finish, its sibling did; status 0."""
    for real, state in enumerate(["finalized", "finalizing", "finalized", "finalized"]):
        _status(tmp_path, real, state, "0")
    out = verdict(tmp_path, 2, 2, rc=137)
    assert out.status == 0 and "SDR: rank 1 lost replica 0 and finished in replica 1" in out.lines


def test_exclusion_is_on_unless_replicas_share_cores():
    assert exclusion_lines(None, 3, nprocs=4, cores=8) == ["sdr_exclude 2 3"]
    assert exclusion_lines(None, 3, nprocs=8, cores=4) == []  # taking turns on a core looks slow
    assert exclusion_lines(4, 5, nprocs=8, cores=4) == ["sdr_exclude 4 5"]  # asked for: on
    assert exclusion_lines(0, 3, nprocs=2, cores=8) == []
    for args, message in [((-1, 3), "--exclude-slow -1"), ((2, 0), "--rejoin-after 0")]:
        with pytest.raises(SdrError, match=message):
            exclusion_lines(*args, nprocs=2, cores=2)


def test_verdict_a_replica_stopped_as_slow_is_not_a_failure(tmp_path):
    for real, state in enumerate(["finalized", "finalized", "stopped", "finalized"]):  # rank 0 replica 1 stopped
        _status(tmp_path, real, state)
    (tmp_path / "sdr.slow").write_text("stopped 0 1 950 1795300000.5\nout 0 1 32 1795299999.25\n")
    assert [(e.what, e.call) for e in exclusions(tmp_path)] == [("out", 32), ("stopped", 950)]
    out = verdict(tmp_path, 2, 2, rc=1)
    assert out.status == 0
    assert out.lines[0] == ("SDR: rank 0 replica 1 excluded as slow (its world takes its messages from a sibling) "
                            "at its call 32")
    assert not any("lost" in line for line in out.lines)


def test_a_slowdown_goes_with_kills():
    lines = plan(nranks=2, exclude_slow=2, inject="slow:rank=1,copy=0,factor=3;kill:rank=0,replica=1,call=50").text
    assert "slow 1 0 3.0 1 0" in lines and "sdr_kill_0 0 1 call 50" in lines and "sdr_exclude 2 3" in lines
    with pytest.raises(ValueError, match="one slow: injection at a time"):
        plan(nranks=2, inject="slow:rank=1,copy=0,factor=3;slow:rank=0,copy=0,factor=2")
