"""CSV for spreadsheets: calls.csv (per rank, copy and MPI function: calls, errors, bytes, time) and counters.csv
(per rank, copy and counted event, PAPI's: total, compute phases, in MPI, and per MPI function), each with a
header row.
Reads the store only."""

from __future__ import annotations

import csv
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.collectors import roles
from echo.export.source import procs_of
from echo.store.models import CallSummary, Metric, Run

CALLS_HEADER = ["run", "rank", "copy", "role", "function", "calls", "errors", "bytes", "time_total_s", "time_max_s",
                "time_mean_s"]
COUNTERS_HEADER = ["run", "rank", "copy", "role", "event", "scope", "function", "value", "unit"]


def counter_rows(metrics: list[Metric]) -> list[tuple[int, int, str, str, str, float, str]]:
    """(rank, copy, event, scope, function, value, unit) of every count of the roles that count events (PAPI's):
    scope is total (the whole process), compute (between MPI calls), mpi (inside MPI calls) or function (inside
    calls of one MPI function)."""
    return sorted(tuple(row[1:]) for row in roles.counters(metrics))


def write(session: Session, run: Run, output: Path | None) -> str:
    assert output is not None  # a directory format: the command line insists on --output
    roles = {(p.app_rank, p.copy): p.role for p in procs_of(session, run)}
    sums = session.scalars(select(CallSummary).where(CallSummary.run_id == run.id)
                           .order_by(CallSummary.app_rank, CallSummary.copy, CallSummary.function)).all()
    metrics = session.scalars(select(Metric).where(Metric.run_id == run.id).order_by(Metric.id)).all()
    output.mkdir(parents=True, exist_ok=True)
    with open(output / "calls.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CALLS_HEADER)
        for c in sums:
            w.writerow([run.id, c.app_rank, c.copy, roles.get((c.app_rank, c.copy), ""), c.function, c.calls,
                        c.errors, c.bytes, repr(c.time_total), repr(c.time_max),
                        repr(c.time_total / c.calls) if c.calls else ""])
    counters = counter_rows(metrics)
    with open(output / "counters.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COUNTERS_HEADER)
        for rank, copy, event, scope, function, value, unit in counters:
            w.writerow([run.id, rank, copy, roles.get((rank, copy), ""), event, scope, function, repr(value), unit])
    return (f"wrote run {run.id} as CSV to {output}: calls.csv ({len(sums)} rows), counters.csv ({len(counters)} rows"
            + ("" if counters else ": the run counted no events") + ")")
