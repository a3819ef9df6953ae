"""What the exports read: a run from the store, and its record files (for the formats that show every call),
with progress on standard error for long exports."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.collectors import roles
from echo.progress import Progress
from echo.runformat import runfiles
from echo.runformat.records import RecordFile, RecordsError, read
from echo.store.models import Proc, Run


class ExportError(RuntimeError):
    """An export that cannot be made; the message says why and what to do."""


@dataclass
class Process:
    """One copy of one rank with its records; times in seconds since the run's earliest clock origin."""

    app_rank: int
    copy: int
    role: str
    host: str
    records: RecordFile
    offset: float  # this process's clock origin, in seconds after the run's earliest one

    def starts(self) -> object:  # numpy array of seconds
        return self.offset + self.records.seconds("t_start")

    def ends(self) -> object:
        return self.offset + self.records.seconds("t_end")


def procs_of(session: Session, run: Run) -> list[Proc]:
    return list(session.scalars(select(Proc).where(Proc.run_id == run.id).order_by(Proc.app_rank, Proc.copy)))


def record_processes(run: Run, procs: list[Proc]) -> tuple[list[Process], float]:
    """Every process's record file (those that left none are skipped), and the Unix time all offsets count from.
    Each process's ticks count from its own clock origin (its start_time): putting them on one time line
    needs the origins, which the headers hold."""
    rec_dir = runfiles.records_dir(Path(run.run_dir))
    if not runfiles.has_records(Path(run.run_dir)):
        raise ExportError(f"run {run.id}: its record files are not in {rec_dir} (moved or deleted?); this format "
                          "shows every call, so it needs them: export from the machine that keeps the run directory, "
                          "or use --format json or csv (from the store alone)")
    files = []
    for p in procs:
        path = runfiles.record_file(Path(run.run_dir), p.real_rank)
        if not path.is_file():
            continue
        try:
            files.append((p, read(path)))
        except RecordsError as e:
            print(f"echo export: skipped rank {p.app_rank} copy {p.copy}: {e}", file=sys.stderr)
    if not files:
        raise ExportError(f"run {run.id}: no readable record files in {rec_dir}")
    windowed = [(p, f) for p, f in files if f.windowed]
    if windowed:  # this format shows every call: say which calls it lacks and which option records them
        p, f = windowed[0]
        others = f" (and {len(windowed) - 1} more processes)" if len(windowed) > 1 else ""
        print(f"echo export: rank {p.app_rank} copy {p.copy}{others}: {f.window_text()}; this export shows the "
              "calls recorded", file=sys.stderr)
    origin = min(f.start_time for _, f in files)
    return [Process(p.app_rank, p.copy, p.role, f.host, f, f.start_time - origin) for p, f in files], origin


def iter_with_progress(what: str, processes: list[Process]) -> Iterator[Process]:
    with Progress(f"export {what}", sum(len(p.records.records) for p in processes), "calls") as progress:
        for i, p in enumerate(processes, 1):
            yield p
            progress.step(len(p.records.records), f"{i} of {len(processes)} processes")


def counter_sets(metrics: list) -> dict[tuple[int, int], list[str]]:
    """(rank, copy) -> the events that copy counted (their totals, from the roles that count: PAPI's sets)."""
    out: dict[tuple[int, int], list[str]] = {}
    for _role, rank, copy, event, scope, *_ in roles.counters(metrics):
        if scope == "total":
            out.setdefault((rank, copy), []).append(event)
    return out
