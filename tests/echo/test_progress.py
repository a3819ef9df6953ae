"""Progress of long work on standard error: on a real terminal (a pseudo-terminal) only once the work has lasted;
in pipes only when asked (--progress); and said by the real commands that store, upload and export a run."""

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from echo import progress
from echo.progress import Progress
from tests.conftest import echorun, server_with

MPIECHO = str(Path(sys.executable).parent / "mpiecho")


@pytest.fixture
def terminal(monkeypatch):
    """A real pseudo-terminal; yields (its file, a function that reads what the terminal got). The test itself
    puts it in sys.stderr: pytest's capture takes sys.stderr back between a fixture's setup and the test."""
    leader, follower = os.openpty()
    tty = os.fdopen(follower, "w", buffering=1)

    def got() -> str:
        tty.flush()
        out = b""
        while select.select([leader], [], [], 0.5)[0]:  # the terminal passes the bytes on a moment later
            out += os.read(leader, 65536)
        return out.decode()

    yield tty, got
    tty.close()
    os.close(leader)


def test_on_a_terminal_work_that_lasts_says_how_far_it_is(terminal, monkeypatch):
    tty, got = terminal
    monkeypatch.setattr(sys, "stderr", tty)
    quick = Progress("store", 2, "processes")
    quick.step(1)
    quick.step(1)
    assert got() == "", "work done within a second says nothing"
    with Progress("export chrome", 3, "calls") as slow:
        slow.step(1)
        time.sleep(progress.DELAY + 0.1)
        slow.step(1, "2 of 3 processes")
        slow.step(1, "3 of 3 processes")
    # one line redrawn in place; the last stays (the terminal shows \n as \r\n)
    assert got() == ("\r\033[Kecho export chrome: 2 of 3 calls (67%), 2 of 3 processes"
                          "\r\033[Kecho export chrome: 3 of 3 calls (100%), 3 of 3 processes\r\n")


def test_work_cut_short_on_a_terminal_ends_its_line(terminal, monkeypatch):
    tty, got = terminal
    monkeypatch.setattr(sys, "stderr", tty)
    with pytest.raises(OSError), Progress("upload", 10 << 20, "MiB") as p:
        time.sleep(progress.DELAY + 0.1)
        p.step(5 << 20)
        raise OSError("connection reset")
    assert got() == "\r\033[Kecho upload: 5.0 of 10.0 MiB (50%)\r\n"


def test_in_a_pipe_quiet_unless_asked(capsys, monkeypatch):
    p = Progress("store", 2, "processes")
    time.sleep(progress.DELAY + 0.1)
    p.step(1)
    p.step(1)
    assert capsys.readouterr().err == "", "standard error is not a terminal here"
    monkeypatch.setattr(progress, "FORCED", True)
    p = Progress("store", 3, "processes")
    for _ in range(3):
        p.step(1)
    # the first step at once, then at most once a second, and the end
    assert capsys.readouterr().err.splitlines() == ["echo store: 1 of 3 processes (33%)",
                                                    "echo store: 3 of 3 processes (100%)"]


def test_store_upload_and_export_say_how_far_they_are_when_asked(programs, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "--progress", "-n", "2", "--clones", "2", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    run_dir = tmp_path / "run"
    size = sum(f.stat().st_size for f in (run_dir / "records").glob("*.rec"))
    assert f"echo store: {size / 2**20:.1f} of {size / 2**20:.1f} MiB (100%), 4 of 4 processes' records read" \
        in r.stderr.splitlines()
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]

    def mpiecho(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([MPIECHO, *args], capture_output=True, text=True, timeout=300)

    quiet = mpiecho("export", run_id, "--db", db, "--format", "chrome", "--output", str(tmp_path / "q.json"))
    assert quiet.returncode == 0 and "echo export" not in quiet.stderr, "a pipe gets no progress unasked"
    told = mpiecho("export", run_id, "--db", db, "--format", "chrome", "--output", str(tmp_path / "t.json"),
                   "--progress")
    assert told.returncode == 0, told.stderr
    calls = sum(p["calls"] for p in json.loads(mpiecho("export", run_id, "--db", db, "--json").stdout)["procs"])
    last = [ln for ln in told.stderr.splitlines() if ln.startswith("echo export chrome: ")][-1]
    assert last == f"echo export chrome: {calls} of {calls} calls (100%), 4 of 4 processes", told.stderr
    with server_with(tmp_path / "server", []) as (url, token):
        sent = mpiecho("upload", run_id, "--db", db, "--server", url, "--token", token, "--progress")
    assert sent.returncode == 0, sent.stderr
    lines = sent.stderr.splitlines()
    assert lines[-2].startswith("echo upload: ") and lines[-2].endswith("MiB (100%)"), sent.stderr
    assert lines[-1] == f"echo: uploaded run {run_id} to {url}"
