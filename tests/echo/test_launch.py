"""How a job ends: deaths are named by application rank and copy, unsupported
calls stop with their name, nothing hangs."""

import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import echorun


def test_segfault_in_a_copy_names_rank_and_copy(programs, tmp_path):
    r = echorun(["-n", "3", "--clones", "2", *programs["crash"], "1", "1", "segv"], tmp_path / "run")
    assert r.returncode != 0
    assert "job failed: application rank 1 copy 1 (process 4" in r.stderr
    assert "SIGSEGV" in r.stderr
    status = (tmp_path / "run" / "procs" / "4.status").read_text().split()
    assert status[:2] == ["signal", str(int(signal.SIGSEGV))]


def test_a_copys_own_exit_never_ends_the_application(programs, tmp_path):
    """Rank 1's copy exits(3) in the middle of the loop (as a code does when a write of its own fails): mpirun would
    end every process; the copy ends with the job instead, the representatives finish the program, and the run
    says which copy did not finish and how (exit 22, never a success)."""
    from echo.runformat.constants import EXIT_COPY_FAILED

    r = echorun(["-n", "2", "--clones", "2", *programs["crash"], "1", "1", "exit"], tmp_path / "run")
    assert r.returncode == EXIT_COPY_FAILED, r.stderr
    assert sorted(r.stdout.splitlines()) == ["r0: sum 1", "r1: sum 1"], r.stderr
    assert ("application rank 1 copy 1 (process 3, pid " in r.stderr and "exited with status 3 before "
            "MPI_Finalize where its representative went on: it ended with the job instead of ending it" in r.stderr)
    assert (tmp_path / "run" / "procs" / "3.status").read_text().split()[0] == "aborted"


def test_exit_without_finalize_in_a_representative(programs, tmp_path):
    r = echorun(["-n", "2", "--clones", "2", *programs["crash"], "0", "0", "exit"], tmp_path / "run")
    assert r.returncode != 0
    assert "job failed: application rank 0 copy 0 (process 0" in r.stderr
    assert "ended without MPI_Finalize" in r.stderr


@pytest.mark.parametrize("failing", [-1, 1])
def test_exit_status_after_finalize_is_the_jobs(programs, tmp_path, failing):
    """Every rank (or rank 1 alone) returns 3 from main after MPI_Finalize: echorun exits 3 and names a process
    that returned it, not one that mpirun then terminated."""
    r = echorun(["-n", "3", "--clones", "2", *programs["exit_status"], "3", str(failing)], tmp_path / "run")
    assert r.returncode == 3, r.stderr
    cause = [line for line in r.stderr.splitlines() if line.startswith("echo: job failed: application rank")][0]
    assert cause.endswith("exited after MPI_Finalize (exit status 3)"), cause
    assert failing < 0 or cause.startswith("echo: job failed: application rank 1 copy"), cause


def test_crash_under_interception_only(programs, tmp_path):
    r = echorun(["-n", "2", *programs["crash"], "1", "0", "segv"], tmp_path / "run")
    assert r.returncode != 0 and "application rank 1 copy 0 (process 1" in r.stderr
    # named with its real pid (the one mpirun's own message gives), never "pid 0"
    pid = re.search(r"process rank 1 with PID (\d+) on node", r.stderr).group(1)
    assert f"application rank 1 copy 0 (process 1, pid {pid}) was killed by SIGSEGV" in r.stderr and pid != "0"


def test_sigkill_from_outside_is_not_a_hang(programs, tmp_path):
    """A copy killed with SIGKILL (no handler can run): the job ends and names it."""
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    slow = "from mpi4py import MPI; import time\nfor i in range(600):\n    MPI.COMM_WORLD.Barrier(); time.sleep(0.05)"
    argv = [str(Path(sys.executable).parent / "echorun"), "--run-dir", str(run_dir), "-n", "2", "--clones", "2",
            sys.executable, "-c", slow]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = run_dir / "procs" / "3.status"  # rank 1 copy 1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (status.is_file() and status.read_text().startswith("started")):
        time.sleep(0.2)
    time.sleep(1.0)
    pid = int(status.read_text().split()[3])
    os.kill(pid, signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    assert p.returncode != 0
    assert "job failed: application rank 1 copy 1 (process 3" in err
    assert "ended without MPI_Finalize" in err


def test_unsupported_call_is_named(programs, tmp_path):
    r = echorun(["-n", "2", "--clones", "2", *programs["unsupported"]], tmp_path / "run")
    assert r.returncode != 0
    assert "MPI_Comm_join is not supported with clones" in r.stderr


def test_not_started_by_echorun_passes_through(mpi, programs, tmp_path):
    """The library in a plain mpirun job (no plan) changes nothing."""
    from echo.build import ensure_library
    from tests.conftest import mpirun_native

    lib = ensure_library()
    os.environ["LD_PRELOAD"] = str(lib)
    try:
        r = mpirun_native(mpi, 2, programs["cxx_ring"])
    finally:
        del os.environ["LD_PRELOAD"]
    assert r.returncode == 0 and "r1: done" in r.stdout


def test_library_api_from_python(tmp_path):
    """echo.lib reads which copy a process is through cffi."""
    import sys

    code = ("import echo.lib as L; from mpi4py import MPI; r = MPI.COMM_WORLD.rank; "
            "print(f'r{r}: copy {L.copy_index()} of {L.copies()} role {L.role()} avail {L.available()}')")
    r = echorun(["-n", "2", "--clones", "2", "--output", "all", sys.executable, "-c", code], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "[rank 1 copy 1] r1: copy 1 of 2 role copy avail True" in r.stdout
    assert "[rank 0 copy 0] r0: copy 0 of 2 role representative avail True" in r.stdout


def test_terminating_echorun_ends_the_job(tmp_path):
    """SIGTERM to echorun (a batch system's time limit, a test's timeout) reaches mpirun and every rank."""
    import subprocess
    import sys

    slow = "from mpi4py import MPI; import time\nfor i in range(600):\n    MPI.COMM_WORLD.Barrier(); time.sleep(0.05)"
    run_dir = tmp_path / "run"
    p = subprocess.Popen([str(Path(sys.executable).parent / "echorun"), "--no-store", "--run-dir", str(run_dir),
                          "-n", "2", "--clones", "2", sys.executable, "-c", slow],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status = run_dir / "procs" / "3.status"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not status.is_file():
        time.sleep(0.2)
    time.sleep(1.0)
    pids = [int((run_dir / "procs" / f"{r}.status").read_text().split()[3]) for r in range(4)]
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    time.sleep(2)
    alive = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and
             open(f"/proc/{pid}/stat").read().split()[2] != "Z"]
    assert alive == [], "no rank outlives echorun"


def test_launcher_that_failed_to_start_is_started_again(mpi, programs, tmp_path):
    """PRRTE's PMIx listener occasionally fails before any process exists. That failure cannot be provoked on
    purpose, so an mpirun beside the real mpicc prints PRRTE's message and fails on its first call only, as
    the real one did in CI; echorun must start the job again and finish it."""
    from echo.launch import LAUNCHER_FAILED_TO_START

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mpicc").symlink_to(mpi.mpicc)
    marker = tmp_path / "failed-once"
    (bindir / "mpirun").write_text(
        # `mpirun --version` (echo asks which MPI it belongs to) answers; the first launch fails
        f"#!/bin/sh\nif [ \"$1\" != --version ] && [ ! -e {marker} ]; then touch {marker}\n"
        f"  echo \"{LAUNCHER_FAILED_TO_START.decode()}. We cannot\" >&2; exit 213; fi\n"
        f"exec {mpi.mpirun} \"$@\"\n")
    (bindir / "mpirun").chmod(0o755)
    r = echorun(["-n", "2", "--clones", "2", *programs["p2p"]], tmp_path / "run",
                env={"ECHO_MPICC": str(bindir / "mpicc")})
    assert r.returncode == 0, r.stderr
    assert "mpirun failed to start its launcher before any process ran" in r.stderr
    assert "starting again (2 of 3)" in r.stderr
    assert marker.exists() and r.stdout.strip()
