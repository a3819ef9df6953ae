"""echorun told to stop (a batch system's time limit, Ctrl-C): the whole job ends, whatever state it is in,
and what it did is stored."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from echo.runformat.records import RecordsError, read
from echo.store.db import open_store
from echo.store.models import Proc, Run


def calls_so_far(path: Path) -> int:
    """Records written so far (0 while the file or its header is not there yet)."""
    try:
        return len(read(path).records)
    except (OSError, RecordsError):
        return 0


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_deadlocked_job_ends_on_a_signal(programs, tmp_path, sig, status):
    """Rank 0 waits in MPI_Recv for a message never sent, the others in a barrier: mpirun's own SIGTERM
    handling does not end such a job promptly; echorun must, leaving no process of it and storing its records."""
    run_dir = tmp_path / "run"
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    argv = [str(Path(sys.executable).parent / "echorun"), "--run-dir", str(run_dir), "--db", db, "-n", "3",
            "--clones", "2", *programs["deadlock"]]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    recs = [run_dir / "records" / f"{real}.rec" for real in range(6)]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not all(calls_so_far(f) >= 8 for f in recs):
        time.sleep(0.2)
    assert all(calls_so_far(f) >= 8 for f in recs), "the job reached its deadlock"
    pids = [int((run_dir / "procs" / f"{real}.status").read_text().split()[3]) for real in range(6)]
    sent = time.monotonic()
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    took = time.monotonic() - sent
    print(f"{signal.Signals(sig).name}: job ended {took:.1f} s after the signal")
    assert p.returncode == status, err
    assert [pid for pid in pids if alive(pid)] == [], "no process of the job outlives echorun"
    assert f"job stopped by {signal.Signals(sig).name}" in err
    with Session(open_store(db)) as s:
        run = s.query(Run).one()
        calls = {(q.app_rank, q.copy): q.calls for q in s.query(Proc).filter_by(run_id=run.id)}
        states = {q.state for q in s.query(Proc).filter_by(run_id=run.id)}
    assert run.exit_status == status
    # interrupted, with the signal echorun got: not a failure of the job, nor the SIGTERM echo passed on
    assert run.status == f"interrupted by {signal.Signals(sig).name}", run.status
    assert states == {f"interrupted by {signal.Signals(sig).name}"}, states
    assert len(calls) == 6 and min(calls.values()) >= 8, calls
