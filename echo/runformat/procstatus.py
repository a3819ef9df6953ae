"""How each process of a run ended, from the status file the preload library
keeps (<run dir>/procs/<real rank>.status: "<state> <signal> <time> <pid> <exit>",
where state is started, finalizing (in the real MPI_Finalize, its work done),
finalized, stopped (an SDR replica excluded as slow, stopped at the job's end),
aborted (a copy that called MPI_Abort or exit() where its representative went on: it ended with the job)
or signal (a fatal signal before MPI_Finalize; one in or after it leaves the
state as it was); signal is the signal that ended the process (0: none); exit
its exit status, "-" until it exits, and for ever if it was killed).  mpirun
ends every process once one exits non-zero: the exit statuses tell the
application's own failure from the processes ended after it."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from echo.runformat.runfiles import PLAN, read_if_there, status_file


@dataclass
class ProcessEnd:
    state: str  # "started" (never reached MPI_Finalize), "finalizing", "finalized", "stopped", "aborted", "signal"
    signal: int | None  # the signal that ended it
    pid: str | None
    exit_status: int | None = None  # what the program returned from main or gave exit(); None: it did not exit
    time: float = 0.0  # of the last change (its exit, for one that exited)

    @property
    def signal_name(self) -> str:
        sig = self.signal or 0
        return signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"

    @property
    def final(self) -> bool:
        """It wrote its last word: it exited, or a fatal signal ended it (SIGKILL leaves no word)."""
        return self.exit_status is not None or self.signal is not None

    def text(self) -> str:
        """As the store and the reports say it."""
        code = f", exit status {self.exit_status}" if self.exit_status else ""
        if self.state == "finalized":
            return "finalized" + code
        if self.state == "finalizing":
            return f"ended in MPI_Finalize{f' by {self.signal_name}' if self.signal else ''}" + code
        if self.state == "stopped":
            return "stopped at the end (excluded as slow)"
        if self.state == "aborted":  # a copy's own end: MPI_Abort, or exit() with a status (echo_copy_exits)
            how = f"exited with status {self.exit_status} before MPI_Finalize" if self.exit_status else \
                "called MPI_Abort"
            return f"{how} where its representative went on: it ended with the job instead of ending it"
        if self.state == "signal":
            return f"killed by {self.signal_name}"
        return "no MPI_Finalize" + (f", exit status {self.exit_status}" if self.exit_status is not None else "")


def read_status(run_dir: Path, real: int) -> ProcessEnd | None:
    """None for a process that never loaded the library."""
    return parse_status(read_if_there(status_file(run_dir, real)))


def parse_status(data: bytes | None) -> ProcessEnd | None:
    """A status file's bytes (None: the process left none, it never loaded the library)."""
    if data is None:
        return None
    words = data.decode().split()
    state = words[0] if words else "started"
    sig = int(words[1]) if len(words) > 1 and words[1].isdigit() and int(words[1]) else None
    when = float(words[2]) if len(words) > 2 and words[2].replace(".", "", 1).isdigit() else 0.0
    code = int(words[4]) if len(words) > 4 and words[4].isdigit() else None
    return ProcessEnd(state, sig, words[3] if len(words) > 3 else None, code, when)


def _still_running(pid: str | None, plan: Path) -> bool:
    """A process of this run still alive on this host: its environment names the run's plan (a pid reused by
    another process, or one of another host, does not; a zombie's environment reads empty)."""
    try:
        env = Path(f"/proc/{int(pid or 0)}/environ").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return False
    return any(v.startswith(b"ECHO_PLAN=") and Path(os.fsdecode(v[10:])).resolve() == plan.resolve() for v in env)


def wait_final(run_dir: Path, nprocs: int, limit: float = 10.0) -> None:
    """Returns once no process of the run whose status is not final still runs on this host (mpirun has
    returned, but a verdict read before a process's last word would call a finished process lost), or after
    `limit` seconds."""
    deadline = time.monotonic() + limit
    plan = run_dir / PLAN
    while time.monotonic() < deadline:
        ends = (read_status(run_dir, real) for real in range(nprocs))
        if not any(e and not e.final and _still_running(e.pid, plan) for e in ends):
            return
        time.sleep(0.1)
