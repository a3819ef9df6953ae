"""Performance faults from copies' compute phases: DGRP's estimator on synthetic phase ratios, the injector's
spec, and real runs (an injected slowdown is seen and its end too; a clean run marks nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.perf import (
    Estimator,
    Params,
    PerfError,
    ProcessStatus,
    crowded_hosts,
    host_view,
    judge,
    not_judged_reason,
    parse_slow,
    pooled,
)
from echo.store.db import open_store
from echo.store.models import Event
from tests.conftest import VENV_BIN, busy_host, echorun, lines_by_rank, skip_if_busy


def test_estimator_is_tcps_rule_with_alpha_and_beta():
    e = Estimator(Params())
    e.update(1.2)
    assert e.mean == pytest.approx(0.9 * 1.0 + 0.1 * 1.2)
    assert e.dev == pytest.approx(0.9 * 0.1 + 0.1 * 0.2)
    assert e.threshold() == pytest.approx(1.5 * (e.mean + 4 * e.dev))


def test_judge_marks_a_slow_stretch_and_its_end():
    ratios = np.ones(40)
    ratios[10:20] = 3.0
    changes, slow = judge(ratios, np.ones(40, dtype=bool), Params())
    assert changes == [(11, "non-recommended"), (22, "recommended")]  # 2 strikes in, 3 good phases out
    assert slow == 11


def test_a_single_preempted_phase_is_not_a_slow_process():
    ratios = np.ones(40)
    ratios[[5, 17, 30]] = 4.0
    assert judge(ratios, np.ones(40, dtype=bool), Params()) == ([], 0)


def test_phases_too_short_to_judge_are_left_out():
    ratios = np.full(10, 5.0)
    assert judge(ratios, np.zeros(10, dtype=bool), Params()) == ([], 0)


def test_short_phases_are_pooled_until_the_reference_computed_min_phase():
    ref = np.array([0.35e-3] * 10)  # 0.35 ms phases: pools end where the total passes 1, 2, 3 ms
    times = np.array([ref, ref * 4])
    ratios, judged = pooled(times, ref, 1e-3)
    assert list(np.flatnonzero(judged)) == [2, 5, 8]
    assert np.allclose(ratios[1, judged], 4.0) and np.allclose(ratios[0, judged], 1.0)
    assert not pooled(times[:, :2], ref[:2], 1e-3)[1].any()  # 0.7 ms in all: nothing judged


def test_a_host_is_slow_while_any_of_its_processes_is():
    a = ProcessStatus(0, 1, "h1", judged=10, slow=4, changes=[(3, 0.3, "non-recommended"), (8, 0.8, "recommended")])
    b = ProcessStatus(1, 1, "h1", judged=10, slow=2, changes=[(5, 0.5, "non-recommended"), (9, 0.9, "recommended")])
    c = ProcessStatus(1, 0, "h2", judged=10)
    hosts = {h["host"]: h for h in host_view([a, b, c])}
    assert hosts["h1"]["changes"] == [(0.3, "non-recommended"), (0.9, "recommended")]
    assert hosts["h1"]["slow_fraction"] == 0.3 and hosts["h2"]["slow_fraction"] == 0.0


def test_slow_specs():
    assert parse_slow("slow:rank=1,copy=1,factor=3,from=10,to=25", [2, 2]) == "1 1 3.0 10 25"
    assert parse_slow("slow:rank=0,copy=0,factor=2", [2]) == "0 0 2.0 1 0"
    for bad, why in [("slow:rank=2,copy=0,factor=2", "rank 2 does not exist"),
                     ("slow:rank=0,copy=2,factor=2", "copies 0..1"),
                     ("slow:rank=0,copy=1,factor=1", "factor must be > 1"),
                     ("slow:rank=0,copy=1,factor=2,from=9,to=3", "to, if given, after it"),
                     ("slow:rank=0,factor=2", "expected slow:rank=R,copy=K,factor=F")]:
        with pytest.raises(PerfError, match=why):
            parse_slow(bad, [2, 2])


def status_at(changes: list[tuple[int, str]], call: int) -> str:
    """A process's status at a call, from its changes (call, new status)."""
    now = "recommended"
    for seq, status in changes:
        if seq <= call:
            now = status
    return now


def statuses(run_dir) -> dict[tuple[int, int], list]:
    perf = json.loads((run_dir / "perf.json").read_text())
    return {(p["rank"], p["copy"]): p for p in perf["processes"]}


def test_an_injected_slow_copy_is_found_and_let_back(programs, tmp_path):
    """Copy 1 of rank 0 is 4x slower from its 10th call to its 25th (one compute phase between calls)."""
    r = echorun(["-n", "1", "--clones", "2", "--inject", "slow:rank=0,copy=1,factor=4,from=10,to=25",
                 *programs["phases"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    skip_if_busy(tmp_path / "run")
    assert lines_by_rank(r.stdout)[0][-1] == "r0: done"
    slowed = statuses(tmp_path / "run")[0, 1]
    changes = [(seq, status) for seq, _, status in slowed["changes"]]
    assert status_at(changes, 9) == "recommended", changes  # healthy before the slowdown
    assert status_at(changes, 14) == "non-recommended", changes  # found within a few phases
    assert status_at(changes, 31) == "recommended" and changes[-1][0] >= 25, changes  # back once it stopped
    assert slowed["slow"] >= 8, slowed  # non-recommended for most of the 15 slow phases
    assert "performance: rank 0 copy 1" in r.stderr
    assert "injection slow:rank=0,copy=1,factor=4,from=10,to=25: fired at call 10" in r.stderr
    assert "not judged" not in r.stderr  # 2 processes, a core each on this 2-core machine


def test_a_clean_run_marks_nothing(programs, tmp_path):
    r = echorun(["-n", "1", "--clones", "2", *programs["phases"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert all(not p["changes"] for p in statuses(tmp_path / "run").values())
    assert "non-recommended" not in r.stderr
    if not busy_host(tmp_path / "run"):
        assert "performance: no process was slow" in r.stderr


def test_a_busy_host_is_not_judged(programs, tmp_path):
    """2 processes of the job on 2 cores (a core each), and other work wanting every core: they take turns, so
    no process is flagged (as the quiet demo once was, 30% slow); the reason is said, and stored."""
    cores = os.cpu_count() or 1
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * cores)]
    try:
        db = f"sqlite:///{tmp_path / 'echo.db'}"
        r = echorun(["--db", db, "-n", "1", "--clones", "2", *programs["phases"]], tmp_path / "run")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert r.returncode == 0, r.stderr
    load = json.loads((tmp_path / "run" / "hostload.json").read_text())
    assert load["cores"] == cores and load["runnable_median"] >= 2 * cores, load
    perf = json.loads((tmp_path / "run" / "perf.json").read_text())
    assert perf["processes"] == [] and perf["hosts"] == []
    assert [(p["rank"], p["copy"]) for p in perf["not_judged"]] == [(0, 0), (0, 1)]
    assert all(" was busy: " in p["reason"] and f"ready to run on its {cores} cores (the job's 2 and other work)"
               in p["reason"] for p in perf["not_judged"]), perf["not_judged"]
    assert "performance: not judged" in r.stderr and "non-recommended" not in r.stderr
    with Session(open_store(db)) as s:
        kinds = [e.kind for e in s.scalars(select(Event))]
    assert kinds.count("perf-not-judged") == 2 and "slowness" not in kinds and "slow-host" not in kinds


def test_explicit_tests_find_a_slow_rank_without_copies(programs, tmp_path):
    """--perf-tests 2: every process times DGRP's fixed test before every 2nd call; rank 1 is 4x slower from
    its 10th call to its 30th."""
    r = echorun(["-n", "2", "--perf-tests", "2", "--inject", "slow:rank=1,copy=0,factor=4,from=10,to=30",
                 *programs["phases"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    skip_if_busy(tmp_path / "run")
    perf = json.loads((tmp_path / "run" / "perf.json").read_text())
    assert perf["processes"] == [] or all(p["judged"] == 0 for p in perf["processes"])  # no copies to compare
    slowed = next(p for p in perf["tested"] if p["rank"] == 1)
    changes = [(seq, status) for seq, _, status in slowed["changes"]]
    assert status_at(changes, 8) == "recommended", changes
    assert status_at(changes, 16) == "non-recommended", changes  # tests every 2nd call: within a few tests
    assert status_at(changes, 38) == "recommended" and changes[-1][0] >= 30, changes
    assert "(explicit tests)" in r.stderr


def test_why_a_process_is_not_judged():
    crowded = {"vm": (6, 2, 6)}
    assert "6 processes shared 2 cores on vm" in not_judged_reason("copy", "vm", crowded)
    busy = not_judged_reason("copy", "vm", {"vm": (2, 2, 9.5)})
    assert busy.startswith("vm was busy: 9.5 processes were ready to run on its 2 cores (the job's 2 and other")
    assert not_judged_reason("callgrind-slice-1", "other", crowded) == \
        "its role (callgrind-slice-1) makes it slow by design"
    assert not_judged_reason("callgrind", "vm", crowded) == "its role (callgrind) makes it slow by design"
    assert not_judged_reason("memcheck", "other", {}) == "its role (memcheck) makes it slow by design"
    assert not_judged_reason("papi-set-1", "other", crowded) is None
    assert not_judged_reason("noise-1", "other", crowded) is None


def test_a_host_is_crowded_by_the_job_or_by_other_work():
    """2 processes on 2 cores are judged on a quiet host; not where other work wanted the cores too (the load
    sampled while the job ran) nor where the job alone outnumbered them; other hosts' load is not known."""
    import socket
    from types import SimpleNamespace

    here = socket.gethostname()
    two = [SimpleNamespace(host=here), SimpleNamespace(host=here)]
    quiet = {"host": here, "cores": 2, "runnable_median": 2}
    assert crowded_hosts(two, 2, quiet) == {} and crowded_hosts(two, 2, None) == {}
    assert crowded_hosts(two, 2, dict(quiet, runnable_median=7.5)) == {here: (2, 2, 7.5)}
    assert crowded_hosts(two * 2, 2, quiet) == {here: (4, 2, 4)}
    elsewhere = [SimpleNamespace(host="other-node")] * 2
    assert crowded_hosts(elsewhere, 2, dict(quiet, host="other-node", runnable_median=9)) == {}


def test_processes_sharing_cores_are_not_judged(programs, tmp_path):
    """More processes than cores (ranks x 2 copies > cores): they take turns on a core, so no process or host is
    flagged; the diagnosis says why it judged none, in echorun's summary and in the store."""
    nranks = (os.cpu_count() or 1) // 2 + 1
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", str(nranks), "--clones", "2", *programs["phases"], "20"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    perf = json.loads((tmp_path / "run" / "perf.json").read_text())
    assert perf["processes"] == [] and perf["hosts"] == []
    assert [(p["rank"], p["copy"]) for p in perf["not_judged"]] == [(k, c) for k in range(nranks) for c in (0, 1)]
    assert all(f"{2 * nranks} processes shared {os.cpu_count()} cores" in p["reason"] for p in perf["not_judged"])
    assert "performance: not judged" in r.stderr
    assert "non-recommended" not in r.stderr and "hosts often slow" not in r.stderr
    with Session(open_store(db)) as s:
        kinds = [e.kind for e in s.scalars(select(Event))]
    assert kinds.count("perf-not-judged") == 2 * nranks
    assert "slowness" not in kinds and "slow-host" not in kinds
    report = subprocess.run([str(VENV_BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True,
                            timeout=120).stdout
    said = [line for line in report.splitlines() if "perf-not-judged" in line]
    assert len(said) == 1 and f"{2 * nranks} processes shared" in said[0], said  # one line per reason


def test_a_copy_under_memcheck_is_not_judged(programs, tmp_path):
    """1 rank x 2 copies (a core each), copy 1 under memcheck: slow by design, not flagged; copy 0 has no copy
    left to be compared with."""
    r = echorun(["--no-store", "-n", "1", "--clones", "2", "--valgrind", "1:memcheck", *programs["phases"], "6"],
                tmp_path / "run", timeout=300)
    assert r.returncode == 0, r.stderr
    perf = json.loads((tmp_path / "run" / "perf.json").read_text())
    busy = [p for p in perf["not_judged"] if " was busy: " in p["reason"]]  # other work wanted the cores too
    assert [p for p in perf["not_judged"] if p not in busy] == [
        {"rank": 0, "copy": 1, "host": perf["not_judged"][0]["host"],
         "reason": "its role (memcheck) makes it slow by design"}]
    assert [(p["rank"], p["copy"]) for p in busy] in ([], [(0, 0)])
    assert all(not p["changes"] and p["judged"] == 0 for p in perf["processes"])
    assert "non-recommended" not in r.stderr


def test_phases_while_the_host_was_busy_are_left_out(programs, tmp_path):
    """The injected slow stretch of a real run, said afterwards to have run while other work kept the host busy
    (as hostload.json says of a burst): those phases are left out, so nothing is flagged, and echo says why."""
    from echo.perf import analyse, describe
    from echo.runformat.records import read_run

    r = echorun(["-n", "1", "--clones", "2", "--inject", "slow:rank=0,copy=1,factor=4,from=10,to=25",
                 *programs["phases"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    skip_if_busy(tmp_path / "run")
    assert statuses(tmp_path / "run")[0, 1]["changes"], "the slowdown was found, before the busy span was said"
    f = next(f for f in read_run(tmp_path / "run") if f.copy == 1)
    starts = f.start_time + f.seconds("t_start")
    loadfile = tmp_path / "run" / "hostload.json"
    load = json.loads(loadfile.read_text())
    load["busy"] = [[float(starts[9]), float(starts[26])]]  # the slow calls 10..25, and the phases into them
    loadfile.write_text(json.dumps(load))
    result = analyse(tmp_path / "run")
    assert all(not p["changes"] for p in result["processes"]), result["processes"]
    (left,) = result["busy_left_out"]
    assert left["rank"] == 0 and 0 < left["phases"] <= left["of"], left
    assert any("was busy with other work during them" in line for line in describe(result))
