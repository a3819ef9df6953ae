"""mpiecho runs / report / export over runs stored by echorun."""

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import echorun

BIN = Path(sys.executable).parent


def mpiecho(*args):
    return subprocess.run([str(BIN / "mpiecho"), *args], capture_output=True, text=True)


def test_runs_report_export(programs, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    # reading a store that is not there creates none: `runs` lists nothing, `report` has no run to report
    r = mpiecho("runs", "--db", db)
    assert r.returncode == 0 and f"no runs stored yet: there is no store at {tmp_path / 'echo.db'}" in r.stdout
    r = mpiecho("report", "--db", db)
    assert r.returncode == 2 and f"no runs stored yet: there is no store at {tmp_path / 'echo.db'}" in r.stderr
    assert not (tmp_path / "echo.db").exists()
    echorun(["--db", db, "-n", "2", "--clones", "2", *programs["p2p"]], tmp_path / "a")
    r2 = echorun(["--db", db, "-n", "2", "--clones", "0=3", *programs["crash"], "1", "0", "exit"], tmp_path / "b")
    assert r2.returncode != 0
    runs = mpiecho("runs", "--db", db).stdout.splitlines()
    assert runs[0].split()[:2] == ["RUN", "STARTED"] and len(runs) == 3
    assert "crash" in runs[1] and "failed" in runs[1] and "3,1" in runs[1]
    latest = mpiecho("report", "--db", db).stdout
    assert "events (" in latest and "application rank 1 copy 0 (process 1): no MPI_Finalize" in latest
    p2p_id = runs[2].split()[0]
    rep = mpiecho("report", p2p_id[:24], "--db", db).stdout
    assert f"run {p2p_id}" in rep and "MPI_Sendrecv_replace" in rep
    lines = [line.split() for line in rep.splitlines()]
    assert ["1", "1", "copy", "finalized"] in [row[:4] for row in lines]
    data = json.loads(mpiecho("export", p2p_id, "--json", "--db", db).stdout)
    assert data["id"] == p2p_id and len(data["procs"]) == 4
    assert {c["function"] for c in data["call_summaries"]} >= {"MPI_Send", "MPI_Recv", "MPI_Probe"}
    bad = mpiecho("report", "nope", "--db", db)
    assert bad.returncode == 2 and "no run 'nope' in the store" in bad.stderr
