"""Status files: how a process ended, read back, and echorun waiting for a process of the run still
running before it judges the job."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from echo.runformat.procstatus import read_status, wait_final

# a process of the run (its environment names the run's plan) that says it started, as the library does in
# MPI_Init, and writes its last word a moment later; each line replaces the last whole (the library rewrites its
# line in place: never an empty file)
LATE_WRITER = """import os, sys, time
def say(line):
    open(sys.argv[1] + ".new", "w").write(line % os.getpid())
    os.replace(sys.argv[1] + ".new", sys.argv[1])
say("started 0 1.0 %d -\\n")
time.sleep(1.0)
say("finalized 0 12.5 %d 3\\n")
"""


def test_fields_are_read(tmp_path):
    (tmp_path / "procs").mkdir()
    (tmp_path / "procs" / "0.status").write_text("finalizing 15 0 4242 -" + " " * 40 + "\n")
    (tmp_path / "procs" / "1.status").write_text("finalized 0 1795474527.339138450 4243 3\n")
    (tmp_path / "procs" / "2.status").write_text("signal 11 0 0 4244\n")  # before exit statuses were kept
    killed, exited, old = (read_status(tmp_path, r) for r in range(3))
    assert (killed.state, killed.signal, killed.exit_status, killed.final) == ("finalizing", 15, None, True)
    assert killed.text() == "ended in MPI_Finalize by SIGTERM"
    assert (exited.exit_status, exited.time, exited.final) == (3, 1795474527.33913845, True)
    assert exited.text() == "finalized, exit status 3"
    assert (old.state, old.signal) == ("signal", 11)
    assert read_status(tmp_path, 3) is None


def test_wait_final_waits_for_a_process_of_the_run_still_running(tmp_path):
    (tmp_path / "procs").mkdir()
    (tmp_path / "plan").write_text("echo-plan 1\n")
    status = tmp_path / "procs" / "0.status"
    writer = subprocess.Popen([sys.executable, "-c", LATE_WRITER, str(status)],
                              env=dict(os.environ, ECHO_PLAN=f"{tmp_path}//plan"))
    # the process names itself once it runs (written here for it, the pid could be read before its exec, in this
    # test's environment, not the run's: the wait would rightly end at once)
    while writer.poll() is None and not status.exists():
        time.sleep(0.01)
    try:
        wait_final(tmp_path, 1, limit=60)
        end = read_status(tmp_path, 0)
        assert end.final and end.exit_status == 3
    finally:
        writer.wait()


def test_wait_final_does_not_wait_for_an_unrelated_process(tmp_path):
    """A pid of another program (here this test's own): not a process of the run, so nothing to wait for."""
    (tmp_path / "procs").mkdir()
    (tmp_path / "plan").write_text("echo-plan 1\n")
    (tmp_path / "procs" / "0.status").write_text(f"started 0 1.0 {os.getpid()} -\n")
    wait_final(tmp_path, 1, limit=600)  # returns at once (a hang here would be the failure)
    assert not read_status(tmp_path, 0).final
