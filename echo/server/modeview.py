"""What each mode did, in its own terms, for the run page: what a rank's processes are (copies, replicas, one
process), and for Reinit its repairs with times from the run's start and durations, and the processes it
restarted (their records are kept apart: records/restarts/)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from echo.runformat.records import RecordsError, read
from echo.runformat.runfiles import restart_record_files

# the repair's words (preload/reinit/echo_reinit.c, say_repaired): epoch seconds of each step
REPAIR = re.compile(r"failed (\d+) first (-?\d+) seen ([\d.]+) shrunk ([\d.]+) spawned ([\d.]+) repaired ([\d.]+) "
                    r"attempts (\d+)")


@dataclass
class Repair:
    number: int  # 1, 2, ... in the run
    failed: int  # ranks restarted
    first: int  # the first of them
    seen: float  # seconds from the run's start to the failure being seen
    shrink: float  # seconds to shrink the world to its survivors
    spawn: float  # seconds to start the replacements
    rejoin: float  # seconds for them to join and the world to be whole
    attempts: int

    @property
    def total(self) -> float:
        return self.shrink + self.spawn + self.rejoin

    def text(self) -> str:
        who = f"rank {self.first}" + (f" and {self.failed - 1} more" if self.failed > 1 else "")
        return (f"repair {self.number}: {who} failed, seen {self.seen:.2f} s after the start; the world was whole "
                f"again {self.total:.2f} s later (shrink {self.shrink:.3f} s, restart {self.spawn:.3f} s, rejoin "
                f"{self.rejoin:.3f} s)" + (f", in {self.attempts} attempts" if self.attempts > 1 else ""))


def repairs(events: list, started_at: float) -> list[Repair]:
    """Reinit's repairs from its "reinit" events, in order."""
    out = []
    for e in events:
        m = REPAIR.search(e.message) if e.kind == "reinit" else None
        if m:
            failed, first, seen, shrunk, spawned, done, attempts = m.groups()
            out.append(Repair(e.call_seq or len(out) + 1, int(failed), int(first), float(seen) - started_at,
                              float(shrunk) - float(seen), float(spawned) - float(shrunk),
                              float(done) - float(spawned), int(attempts)))
    return out


@dataclass
class Restart:
    rank: int
    calls: int
    finished: bool


def restarts(run_dir: str, finished: bool) -> dict[int, Restart]:
    """The last restarted process of each rank, from its record file (none when the run directory is gone).
    finished: the job ended well (a Reinit job exits 0 only when every rank finished: echo/launch.py), so each
    restarted process did (its record file stops before MPI_Finalize, as every Reinit process's does)."""
    out = {}
    for rank, paths in restart_record_files(Path(run_dir)).items():
        try:
            f = read(paths[-1])
        except (OSError, RecordsError):
            continue
        out[rank] = Restart(rank, len(f.records), finished)
    return out
