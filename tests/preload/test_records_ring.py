"""Records at a profiler's cost (docs/records.md): by default each process keeps call 0 and a ring of its last calls,
its other calls as per-function totals, so a process that makes many calls leaves a bounded file; the totals and the
records hold every call the program made, once. `--trace` records every call (the timeline, the exports). Real
runs of a polling loop under real mpirun; the program counts its own calls."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.plan import RING_CALLS
from echo.runformat.records import RECORD, read, read_lost
from echo.store.db import open_store
from echo.store.models import CallSummary, Proc
from tests.conftest import compile_programs, echorun, lines_by_rank

STEPS = 3 * RING_CALLS  # polls per rank: three rings' worth


@pytest.fixture(scope="module")
def polls(mpi, tmp_path_factory) -> list[str]:
    return compile_programs(mpi, tmp_path_factory.mktemp("bin"), None, ["polls"])["polls"]


def said(stdout: str) -> dict[int, dict[str, int]]:
    """What each rank printed of its own calls: polls, sent, received."""
    out = {}
    for rank, lines in lines_by_rank(stdout).items():
        m = re.search(r"polls (\d+) found \d+ sent (\d+) received (\d+)", lines[-1])
        out[rank] = {"MPI_Iprobe": int(m[1]), "MPI_Send": int(m[2]), "MPI_Recv": int(m[3])}
    return out


def stored(db: str, run_dir: Path) -> tuple[dict, dict]:
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    with Session(open_store(db)) as s:
        calls = {(c.app_rank, c.function): c.calls
                 for c in s.scalars(select(CallSummary).where(CallSummary.run_id == run_id))}
        procs = {p.app_rank: p.calls for p in s.scalars(select(Proc).where(Proc.run_id == run_id))}
    return calls, procs


def test_many_calls_leave_bounded_records_and_every_call_counted(polls, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", *polls, str(STEPS)], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    counted = said(r.stdout)
    calls, procs = stored(db, tmp_path / "run")
    for rank in (0, 1):
        path = tmp_path / "run" / "records" / f"{rank}.rec"
        f = read(path)
        assert f.damage is None
        # bounded: the header, call 0 and the ring; the program made three rings' worth of calls
        assert path.stat().st_size <= 32768 + (RING_CALLS + 1) * RECORD.itemsize, path.stat().st_size
        assert f.windowed and len(f.records) == RING_CALLS + 1 and f.calls > STEPS
        assert list(f.records["seq"][1:]) == list(range(f.calls - RING_CALLS, f.calls))
        assert f.function_names()[0] == "MPI_Init"
        assert read_lost(tmp_path / "run", rank).ring
        for fn, n in counted[rank].items():  # every call the program counted, once: the records' and the totals'
            assert calls.get((rank, fn), 0) == n, (rank, fn, calls)
        assert procs[rank] == f.calls
    assert "echorun --trace records every call" in r.stderr


def test_trace_records_every_call_for_the_timeline_and_exports(polls, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "--trace", "-n", "2", *polls, str(STEPS)], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    counted = said(r.stdout)
    calls, _ = stored(db, tmp_path / "run")
    for rank in (0, 1):
        f = read(tmp_path / "run" / "records" / f"{rank}.rec")
        assert f.damage is None and not f.windowed and f.ring == 0
        assert len(f.records) == f.calls and list(f.records["seq"][:3]) == [0, 1, 2]
        names = list(f.function_names())
        for fn, n in counted[rank].items():
            assert names.count(fn) == n == calls.get((rank, fn), 0)
        assert read_lost(tmp_path / "run", rank) is None
    assert "--trace" not in r.stderr


def test_exports_and_the_timeline_say_which_option_brings_every_call(polls, tmp_path):
    from echo.server.plots import binned, binned_timeline, call_timeline

    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", *polls, str(STEPS)], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    mpiecho = Path(sys.executable).parent / "mpiecho"
    import subprocess

    out = tmp_path / "trace.json"
    e = subprocess.run([str(mpiecho), "export", run_id, "--db", db, "--format", "chrome", "--output", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert e.returncode == 0, e.stderr
    assert "echorun --trace" in e.stderr and "last 65536 of its" in e.stderr, e.stderr
    events = json.loads(out.read_text())["traceEvents"]
    assert sum(ev.get("ph") == "X" for ev in events) == 2 * (RING_CALLS + 1)  # the calls kept, no more
    chart = call_timeline(str(tmp_path / "run"), {}, [])
    assert "echorun --trace" in chart
    whole = binned(str(tmp_path / "run"), 2, [])  # the run page's binned view: its time before the ring not drawn
    assert whole.windowed == 2
    assert "echorun --trace" in binned_timeline(str(tmp_path / "run"), 2, whole, lambda a, z: f"/ranks/{a}-{z}")


def test_a_crash_shows_its_last_calls_and_its_totals(polls, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", *polls, str(STEPS), "crash"], tmp_path / "run")
    assert r.returncode != 0
    path = tmp_path / "run" / "records" / "1.rec"
    assert path.stat().st_size <= 32768 + (RING_CALLS + 1) * RECORD.itemsize  # bounded, as a run that ends well
    f = read(path)
    assert f.damage is None and f.windowed
    names = list(f.function_names())
    # its last calls, as it made them: polls, the sends every 1000 steps, then the last send before the stray pointer
    assert names[-1] == "MPI_Send" and f.records["tag"][-1] == 6 and set(names[-100:-1]) <= {"MPI_Iprobe", "MPI_Send"}
    calls, procs = stored(db, tmp_path / "run")
    assert calls[(1, "MPI_Iprobe")] == STEPS  # the loop's polls: no line printed, the program died before
    assert calls[(1, "MPI_Send")] == STEPS // 1000 + 1
    assert procs[1] == f.calls
