"""Ending a job when echorun is told to stop (SIGTERM, SIGINT, SIGHUP), whatever state the job is in.

mpirun is asked first (it runs in a process group of its own, which gets SIGTERM); a job stuck where mpirun
cannot end it (a process waiting in MPI for a peer that will never come, Open MPI's "Abort is in progress",
a hung vote) is then killed: every process of the job still alive (their pids are in the run directory's
status files) and mpirun's group get SIGKILL. Records survive it (the preload library writes them into a
shared file mapping), so echorun still stores what the job did. A second signal kills at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from echo.runformat.runfiles import ECHO_STOPPED, status_files

GRACE = 3.0  # seconds mpirun has to end the job itself before echo kills what is left
STOPPED_GRACE = 10.0  # seconds mpirun has to end a job echo stopped itself (runfiles.ECHO_STOPPED)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def job_pids(run_dir: Path) -> list[int]:
    """Live processes of this run's job on this host: the pids of its status files (procs/<real>.status,
    "<state> <arg> <time> <pid>") whose process still has this run's plan in its environment (a pid reused
    by another program is left alone)."""
    plan = f"ECHO_PLAN={run_dir / 'plan'}".encode()
    pids = []
    for status in status_files(run_dir):
        words = status.read_text(errors="replace").split()
        if len(words) < 4 or not words[3].isdigit():
            continue
        try:
            environ = Path(f"/proc/{words[3]}/environ").read_bytes()
        except OSError:  # gone already, or not ours to read
            continue
        if plan in environ.split(b"\0"):
            pids.append(int(words[3]))
    return pids


def _say(msg: str) -> None:
    """One line in one write: a second signal's handler runs between Python statements and must not land
    inside the first one's line."""
    sys.stderr.write(f"echo: {msg}\n")
    sys.stderr.flush()


class JobStopper:
    """Installed for the life of a job: turns echorun's termination signals into the end of the whole job."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.signal: int | None = None  # the first stop signal received
        self.proc: subprocess.Popen | None = None
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def watch(self, proc: subprocess.Popen) -> None:
        """The mpirun to stop (started with start_new_session=True: its process group is its pid)."""
        self.proc = proc
        if self.signal is not None:  # told to stop while it was starting
            self._group(signal.SIGTERM)
            self._kill_later()
        threading.Thread(target=self._end_stopped_job, args=(proc,), daemon=True).start()

    def _end_stopped_job(self, proc: subprocess.Popen) -> None:
        """A job echo stopped without MPI_Abort (SDR refusing a call) is over: Open MPI 5's mpirun under ULFM may
        never notice that its processes all exited (MPICH's coll/allred5 -n 10 under SDR), so what is left
        STOPPED_GRACE seconds after the note is killed."""
        note = self.run_dir / ECHO_STOPPED
        while proc.poll() is None and not note.exists():
            time.sleep(0.5)
        try:
            proc.wait(timeout=STOPPED_GRACE)
        except subprocess.TimeoutExpired:
            why = note.read_text(errors="replace").strip().removeprefix("echo: ")
            _say(f"{why}: the job did not end {STOPPED_GRACE:.0f} s after echo stopped it; killing what is left")
            self.kill_now()

    def _on_signal(self, sig: int, _frame: object) -> None:
        if self.signal is not None:
            _say("killing the job now")
            self.kill_now()
            return
        self.signal = sig
        _say(f"{signal.Signals(sig).name}: stopping the job (whatever is left after {GRACE:.0f} s is killed; again "
             "to kill it now)")
        self._group(signal.SIGTERM)
        self._kill_later()

    def _group(self, sig: int) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def _kill_later(self) -> None:
        def wait_then_kill() -> None:
            try:
                if self.proc is not None:
                    self.proc.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                pass
            self.kill_now()  # mpirun may be gone and its processes not (they need not be its group's)

        threading.Thread(target=wait_then_kill, daemon=True).start()

    def kill_now(self) -> None:
        for pid in job_pids(self.run_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._group(signal.SIGKILL)

    @property
    def status(self) -> int:
        """echorun's exit status after a stop: the shell's convention, 128 + the signal."""
        return 128 + (self.signal or 0)

    def restore(self) -> None:
        for sig in SIGNALS:
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
