"""How each process of a run ended, from the status file the preload library
keeps (<run dir>/procs/<real rank>.status: "<state> <arg> <time> <pid>", where
state is started, finalized, stopped (an SDR replica excluded as slow, stopped
at the job's end) or signal and arg the signal's number)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ProcessEnd:
    state: str  # "started" (never reached MPI_Finalize), "finalized", "stopped" or "signal"
    signal: int | None
    pid: str | None

    @property
    def signal_name(self) -> str:
        sig = self.signal or 0
        return signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"

    def text(self) -> str:
        """As the store and the reports say it."""
        if self.state == "finalized":
            return "finalized"
        if self.state == "stopped":
            return "stopped at the end (excluded as slow)"
        return f"killed by {self.signal_name}" if self.state == "signal" else "no MPI_Finalize"


def read_status(run_dir: Path, real: int) -> ProcessEnd | None:
    """None for a process that never loaded the library."""
    path = run_dir / "procs" / f"{real}.status"
    if not path.is_file():
        return None
    words = path.read_text().split()
    state = words[0] if words else "started"
    return ProcessEnd(state, int(words[1]) if state == "signal" else None, words[3] if len(words) > 3 else None)
