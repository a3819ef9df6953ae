"""--format chrome, read back by Chromium DevTools' own trace engine (the Performance panel's importer), run under
node: the tracks, names and slices it makes of the file must be the run's calls."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need_papi_counting
from tests.echo.export.helpers import calls_per_track, export, mpiecho

MODULES = Path(sys.executable).parent.parent / "node" / "node_modules"
READER = Path(__file__).with_name("read_chrome_trace.mjs")


def devtools_read(trace: Path) -> dict:
    if not shutil.which("node") or not (MODULES / "@paulirish" / "trace_engine").is_dir():
        pytest.skip("Chromium DevTools' trace engine is not installed (node and npm; scripts/setup.sh installs it)")
    p = subprocess.run(["node", str(READER), str(MODULES), str(trace)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_chrome_trace_read_by_devtools(exported_run, tmp_path):
    db, run_id, rows = exported_run
    out = tmp_path / "trace.json"
    r = export(db, run_id, "chrome", out)
    assert f"wrote run {run_id} as a Chrome trace" in r.stderr
    parsed = devtools_read(out)
    tracks = {(p["pid"], t["tid"]): t for p in parsed["processes"] for t in p["threads"]}
    roles = {(p.app_rank, p.copy): p.role for p in rows["Proc"]}
    assert set(tracks) == set(roles)  # one track per rank x copy: pid = rank, tid = copy
    expected = calls_per_track(rows)
    for key, track in tracks.items():
        assert track["name"] == f"copy {key[1]} ({roles[key]})"
        got: dict[str, int] = {}
        for name, _ts, dur, _args in track["slices"]:
            got[name] = got.get(name, 0) + 1
            assert dur >= 0
        assert got == expected[key]
        # DevTools orders a thread's slices by time: the calls' own numbers come out in order
        assert [a["seq"] for _n, _t, _d, a in track["slices"]] == list(range(len(track["slices"])))
    sendrecv = [a for n, _t, _d, a in tracks[1, 1]["slices"] if n == "MPI_Sendrecv"]
    assert sendrecv and all(a["communicator"] == "MPI_COMM_WORLD" and a["peer"] == 0 and a["bytes"] > 0
                            and "tag" in a for a in sendrecv)
    # microseconds: the whole trace spans less than the run's wall time, and more than a millisecond
    run_seconds = json.loads(mpiecho("export", run_id, "--db", db, "--json").stdout)["duration"]
    assert 1e3 < parsed["bounds"]["range"] < run_seconds * 1e6


def test_chrome_trace_metadata_and_events(exported_run, tmp_path):
    """The roles, counter sets and the divergence at its call, in the file as the Trace Event Format puts them."""
    db, run_id, rows = exported_run
    out = tmp_path / "trace.json"
    assert mpiecho("export", run_id[:20], "--db", db, "--format", "chrome", "-o", str(out)).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["otherData"]["run"] == run_id
    roles = {f"rank {p.app_rank} copy {p.copy}": p.role for p in rows["Proc"]}
    assert {k: v for k, v in doc["otherData"]["roles"].items() if k in roles} == roles
    names = {(e["pid"], e["args"]["name"]) for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert names == {(0, "rank 0"), (1, "rank 1")}
    div = [e for e in doc["traceEvents"] if e["ph"] == "i" and e["name"] == "divergence"]
    assert [(e["pid"], e["tid"], e["args"]["call"]) for e in div] == [(1, 1, 20)]
    call20 = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == 1
                  and e["args"]["seq"] == 20)
    assert div[0]["ts"] == pytest.approx(call20["ts"], abs=0.01)
    need_papi_counting()
    assert doc["otherData"]["roles"]["rank 1 copy 1"] == "papi-set-1"
    assert doc["otherData"]["counter_sets"]["rank 0 copy 1"] == ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"]


def test_chrome_trace_needs_the_records(exported_run, tmp_path):
    db, run_id, _ = exported_run
    from sqlalchemy import update

    from echo.store.db import open_store
    from echo.store.models import Run

    copy_db = tmp_path / "moved.db"
    shutil.copy(db.removeprefix("sqlite:///"), copy_db)
    engine = open_store(f"sqlite:///{copy_db}")
    with engine.begin() as c:
        c.execute(update(Run).where(Run.id == run_id).values(run_dir=str(tmp_path / "gone")))
    r = mpiecho("export", run_id, "--db", f"sqlite:///{copy_db}", "--format", "chrome", "-o", str(tmp_path / "t.json"))
    assert r.returncode == 2 and "record files are not in" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "t.json").exists()


def test_an_existing_output_is_overwritten_only_with_force(exported_run, tmp_path):
    """One rule for every format: a file (chrome, json) or a directory that is not empty (csv) is refused, and left
    as it was, unless --force."""
    db, run_id, _ = exported_run
    for fmt, out in (("chrome", tmp_path / "existing.json"), ("json", tmp_path / "run.json"),
                     ("csv", tmp_path / "tables")):
        mine = out / "notes.txt" if fmt == "csv" else out
        mine.parent.mkdir(exist_ok=True)
        mine.write_text("mine")
        r = mpiecho("export", run_id, "--db", db, "--format", fmt, "-o", str(out))
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert "already exists" in r.stderr and "--force" in r.stderr
        assert mine.read_text() == "mine" and (fmt != "csv" or sorted(p.name for p in out.iterdir()) == ["notes.txt"])
        r = mpiecho("export", run_id, "--db", db, "--format", fmt, "-o", str(out), "--force")
        assert r.returncode == 0, r.stderr
        if fmt == "csv":
            assert (out / "calls.csv").is_file() and mine.read_text() == "mine"  # its own files only
        else:
            assert json.loads(out.read_text())
