"""How busy this host was while a job ran: the processes ready to run, sampled from /proc/stat. Phase times
judge a core only where every ready process had a core of its own; on a host where other work also wanted the
cores, processes took turns and their phase times measure the scheduler (docs/perf.md)."""

from __future__ import annotations

import json
import os
import socket
import statistics
import threading
from pathlib import Path

from echo.runfiles import HOSTLOAD_JSON

FILE = HOSTLOAD_JSON
EVERY = 0.2  # seconds between samples


def runnable() -> int | None:
    """Processes ready to run on this host now (Linux's procs_running), without the one reading it."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("procs_running "):
                return max(0, int(line.split()[1]) - 1)
    except (OSError, ValueError):
        pass
    return None


class LoadSampler:
    """Samples the host's ready processes while the job runs; `stop` writes RUN_DIR/hostload.json."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.samples: list[int] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(EVERY):
            n = runnable()
            if n is None:
                return
            self.samples.append(n)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        if self.samples:
            try:
                (self.run_dir / FILE).write_text(json.dumps({
                    "host": socket.gethostname(), "cores": os.cpu_count() or 1, "samples": len(self.samples),
                    "runnable_median": statistics.median(self.samples)}))
            except OSError:  # a full disk: the phases are judged as where the load was not sampled
                (self.run_dir / FILE).unlink(missing_ok=True)


def read(run_dir: Path) -> dict | None:
    """The host's load during the run, or None where it was not sampled."""
    try:
        return json.loads((run_dir / FILE).read_text())
    except (OSError, ValueError):
        return None
