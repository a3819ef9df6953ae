"""Profiles for Thicket/Hatchet notebooks: one Caliper JSON file (cali-query's json-split form, which
Thicket.from_caliper and Hatchet's CaliperReader read) per copy of each rank, rank<R>.copy<C>.json.

Each profile is a tree: the program at the root, under it one node per MPI function the copy called and one for
its compute phases (the time between MPI calls). Metrics per node: time (sum#time.duration, seconds), calls,
bytes, errors, the longest call, and each event the copy counted (<role>.<event>, e.g. papi.PAPI_TOT_INS, in the
event's unit: the counts of the roles that count events, through echo/collectors/roles.py). An
event a copy did not count is absent from its profile, so Thicket shows it as missing, never as 0. The run's
metadata (run, program, rank, copy, role, counter set, mode, MPI) is in each file, so a notebook can group
profiles by copy, role or run. Reads the store only."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.collectors import roles
from echo.export.source import counter_sets, procs_of
from echo.store.models import CallSummary, Metric, Run

COMPUTE = "compute (between MPI calls)"
# "Node order" (the node's place in the tree, first) is what Hatchet's reader orders the tree by, as Caliper's
# own queries give it; Thicket.from_caliper needs it
BASE_COLUMNS = ["Node order", "path", "sum#time.duration", "max#time.duration", "count", "bytes", "errors"]


def profile(run: Run, proc: object, sums: list[CallSummary], counters: dict[tuple[str, str], float],
            counter_set: list[str]) -> dict:
    """The json-split document of one copy of one rank: nodes (the path tree), columns, data, metadata."""
    events = sorted({ev for ev, _ in counters})  # "papi.EV": each count's column, named by its role
    columns = BASE_COLUMNS + events
    program = Path(run.program).name
    nodes = [{"label": program, "column": "path"}]
    data = []

    def row(nid: int, time: float | None, tmax: float | None, calls: int | None, nbytes: int | None,
            errors: int | None, where: str) -> list:
        return [nid, nid, time, tmax, calls, nbytes, errors] + [counters.get((ev, where)) for ev in events]

    mpi_time = sum(c.time_total for c in sums)
    data.append(row(0, 0.0, None, None, None, None, ""))
    nodes.append({"label": COMPUTE, "column": "path", "parent": 0})
    data.append(row(1, max(proc.wall_time - mpi_time, 0.0), None, None, None, None, "compute"))
    for c in sorted(sums, key=lambda c: c.function):
        nodes.append({"label": c.function, "column": "path", "parent": 0})
        data.append(row(len(nodes) - 1, c.time_total, c.time_max, c.calls, c.bytes, c.errors, c.function))
    meta = {"run": run.id, "program": program, "argv": " ".join(run.argv), "mode": run.mode, "rank": proc.app_rank,
            "copy": proc.copy, "role": proc.role, "counter_set": ",".join(counter_set), "host": proc.host,
            "state": proc.state, "mpi": run.mpi_library, "started_at": run.started_at, "nranks": run.nranks,
            "exit_status": run.exit_status}
    return {"data": data, "columns": columns,
            "column_metadata": [{"is_value": False}] * 2 + [{"is_value": True}] * (len(columns) - 2),
            "nodes": nodes, **meta}


def write(session: Session, run: Run, output: Path | None) -> str:
    assert output is not None  # a directory format: the command line insists on --output
    procs = procs_of(session, run)
    sums: dict[tuple[int, int], list[CallSummary]] = {}
    for c in session.scalars(select(CallSummary).where(CallSummary.run_id == run.id)):
        sums.setdefault((c.app_rank, c.copy), []).append(c)
    metrics = session.scalars(select(Metric).where(Metric.run_id == run.id).order_by(Metric.id)).all()
    counters: dict[tuple[int, int], dict[tuple[str, str], float]] = {}
    for role, rank, copy, event, scope, function, value, _unit in roles.counters(metrics):
        if scope != "total":  # compute, mpi and per function: the nodes' values; totals are their sums
            counters.setdefault((rank, copy), {})[f"{role}.{event}", function or scope] = value
    sets = counter_sets(metrics)
    output.mkdir(parents=True, exist_ok=True)
    for p in procs:
        doc = profile(run, p, sums.get((p.app_rank, p.copy), []), counters.get((p.app_rank, p.copy), {}),
                      sets.get((p.app_rank, p.copy), []))
        (output / f"rank{p.app_rank}.copy{p.copy}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return (f"wrote run {run.id} as {len(procs)} Caliper JSON profiles (one per rank and copy) to {output}: "
            f"Thicket.from_caliper(sorted(glob('{output}/*.json'))) reads them")
