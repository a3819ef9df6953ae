"""How busy this host was while a job ran: the processes ready to run, sampled from /proc/stat. Phase times
judge a core only where every ready process had a core of its own; on a host where other work also wanted the
cores, processes took turns and their phase times measure the scheduler (docs/perf.md). Beside the median (a host
busy all along: nothing judged), the spans of time the host stayed busy (phases inside them are left out)."""

from __future__ import annotations

import json
import os
import socket
import statistics
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from echo.runformat.runfiles import HOSTLOAD_JSON

if TYPE_CHECKING:  # numpy is imported by the functions that compute: sampling the load does not load it
    import numpy as np

FILE = HOSTLOAD_JSON
EVERY = 0.1  # seconds between samples
MERGE_GAP = 1.0  # busy spans closer than this are one (a host flickering between busy and not is busy)
MAX_SPANS = 1000  # bounds the file for a job of days: past it, the last span runs to the job's end


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
        self.cores = os.cpu_count() or 1
        self.busy: list[list[float]] = []  # [from, to] in seconds since the epoch, as the records' start times
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(EVERY):
            n = runnable()
            if n is None:
                return
            if n > self.cores and self.samples and self.samples[-1] > self.cores:
                self._busy_now(time.time())  # busy for a while: one sample alone is a process waking briefly
            self.samples.append(n)

    def _busy_now(self, now: float) -> None:
        """The second of busy samples in a row: its span reaches from before the first to the sample after it."""
        if self.busy and (now - 2 * EVERY - self.busy[-1][1] < MERGE_GAP or len(self.busy) >= MAX_SPANS):
            self.busy[-1][1] = now + EVERY
        else:
            self.busy.append([now - 2 * EVERY, now + EVERY])

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        if self.samples:
            try:
                (self.run_dir / FILE).write_text(json.dumps({
                    "host": socket.gethostname(), "cores": self.cores, "samples": len(self.samples),
                    "runnable_median": statistics.median(self.samples),
                    "busy": [[round(a, 3), round(b, 3)] for a, b in self.busy]}))
            except OSError:  # a full disk: the phases are judged as where the load was not sampled
                (self.run_dir / FILE).unlink(missing_ok=True)


def read(run_dir: Path) -> dict | None:
    """The host's load during the run, or None where it was not sampled."""
    try:
        return json.loads((run_dir / FILE).read_text())
    except (OSError, ValueError):
        return None


def busy_spans(load: dict | None, host: str) -> np.ndarray:
    """The spans (n x 2, seconds since the epoch) during which `host` had more ready processes than cores; none
    where it was not sampled (only the host echorun ran on is)."""
    import numpy as np

    if not load or load.get("host") != host or not load.get("busy"):
        return np.zeros((0, 2))
    return np.array(load["busy"], dtype=float)


def overlaps(spans: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Which intervals [start, end] meet one of the sorted, disjoint spans."""
    import numpy as np

    if not len(spans):
        return np.zeros(len(start), dtype=bool)
    before = np.searchsorted(spans[:, 0], end, side="left")  # spans that begin before each interval ends
    return (before > 0) & (spans[np.maximum(before - 1, 0), 1] > start)
