"""PAPI's rows in the store: written from a run's record files (ingest_rows), read back as the counts merged per rank
and the events PAPI could not count (the report, the web pages and the JSON API read them), and the report's
section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

UNAVAILABLE = "PAPI cannot count {event} here: {why}; it was left out of the sets"  # a papi-unavailable event's words


def unavailable(session: Any, run_id: str) -> list[tuple[str, str]]:
    """(event, PAPI's reason) of the events the run asked for that PAPI could not count, from the store's
    papi-unavailable events (ingest_rows wrote them with UNAVAILABLE)."""
    import re

    from sqlalchemy import select

    from echo.store.models import Event

    said = re.compile(re.escape(UNAVAILABLE).replace(r"\{event\}", "(.+?)").replace(r"\{why\}", "(.*)"))
    q = select(Event.message).where(Event.run_id == run_id, Event.kind == "papi-unavailable").order_by(Event.id)
    return [m.groups() for m in map(said.fullmatch, session.scalars(q)) if m]


def merged_counters(session: Any, run_id: str, app_rank: int | None = None) -> dict[int, dict]:
    """Per application rank (or of one): every counted event (from the copy that counted it) with its total,
    compute-phase and in-MPI counts and its top functions; and the anchor events compared across copies."""
    from sqlalchemy import select

    from echo.store.models import Metric

    q = select(Metric).where(Metric.run_id == run_id, Metric.name.startswith("papi "))
    rows = session.scalars(q if app_rank is None else q.where(Metric.app_rank == app_rank)).all()
    out: dict[int, dict] = {}
    for m in rows:
        r = out.setdefault(m.app_rank, {"events": {}, "per_copy": {}, "functions": {}, "read_ns": []})
        words = m.name.split(" ", 2)
        if m.name == "papi read":
            r["read_ns"].append(m.value)
            continue
        ev = words[1]
        per = r["per_copy"].setdefault(ev, {}).setdefault(m.copy, {})
        per["unit"] = m.unit or "count"  # PAPI's unit of the event (ns for the perf software clocks)
        if len(words) == 2:
            per["total"] = m.value
        elif words[2] in ("compute", "mpi"):
            per[words[2]] = m.value
        elif words[2].startswith("in "):
            per.setdefault("functions", []).append((m.value, words[2][3:]))
    for r in out.values():
        for ev, copies in r["per_copy"].items():
            first = min(copies)  # the event's numbers come from the lowest copy that counted it
            r["events"][ev] = dict(copies[first], copy=first)
            r["functions"][ev] = copies[first].get("functions", [])
        # anchors: the compute phases are the same work on every copy; time in MPI is not (copies wait
        # for their representative), so the comparison is on the compute phase
        r["anchors"] = {ev: spread([v.get("compute", v.get("total", 0.0)) for v in copies.values()])
                        for ev, copies in r["per_copy"].items() if len(copies) > 1}
    return out


def spread(values: list[float]) -> float:
    """(max - min) / mean, in percent: how far copies that counted the same event disagree."""
    mean = sum(values) / len(values)
    return 100.0 * (max(values) - min(values)) / mean if mean else 0.0



def slot_metrics(f: Any, units: dict[str, str]) -> list[tuple[str, float, str]]:
    """Counter deltas in the record slots, per phase and per function: a slot "EV>" holds the compute
    phase before each call, "EV@" the call itself; each in its event's unit (`units`, from the process's totals)."""
    import numpy as np

    out = []
    fn = f.records["fn"].astype(np.intp)
    for j, name in enumerate(f.slot_names):
        values = f.records["slot"][:, j].astype(np.float64)
        event, phase = name[:-1], name[-1]
        unit = units.get(event, "count")
        if phase == ">":
            out.append((f"papi {event} compute", float(values.sum()), unit))
        elif phase == "@":
            out.append((f"papi {event} mpi", float(values.sum()), unit))
            per_fn = np.bincount(fn, weights=values, minlength=len(f.functions))
            out += [(f"papi {event} in {f.functions[i]}", float(per_fn[i]), unit) for i in np.flatnonzero(per_fn)]
    return out


def process_metrics(f: Any, own: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    """A process's counts in its record slots (echo/store/ingest.py, per record file), each in the unit the
    process gave its total of the event (`own`: its metrics file's "papi EV" lines)."""
    if f is None or not f.slot_names:
        return []
    units = {n.split(" ", 1)[1]: u for n, _, u in own if n.startswith("papi ")}
    return slot_metrics(f, units)


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of the events the planner left out (run.json's papi_unavailable); the counts are each
    process's own metrics and its record slots (slot_metrics)."""
    return [dict(kind="papi-unavailable", message=UNAVAILABLE.format(event=ev, why=why))
            for ev, why in meta.get("papi_unavailable", [])], []


def counter_rows(metrics: list[Any]) -> list[tuple[int, int, str, str, str, float, str]]:
    """(rank, copy, event, scope, function, value, unit) of the counts among a run's metrics, in their order: scope
    is total (the whole process), compute (between MPI calls), mpi (inside MPI calls) or function (inside calls of
    one MPI function); the cost of a read ("papi read") is no count."""
    rows = []
    for m in metrics:
        words = m.name.split(" ", 2)
        if words[0] != "papi" or m.name == "papi read" or len(words) < 2:
            continue
        scope, function = "total", ""
        if len(words) == 3:
            if words[2].startswith("in "):
                scope, function = "function", words[2][3:]
            else:
                scope = words[2]
        rows.append((m.app_rank, m.copy, words[1], scope, function, m.value, m.unit or "count"))
    return rows


def report_section(session: Any, run: Any) -> list[str]:
    """`mpiecho report`'s counters of a stored run (none when no copy counted)."""
    counters = merged_counters(session, run.id)
    return counters_text(counters) if counters else []


def counters_text(counters: dict[int, dict], top: int = 3) -> list[str]:
    from echo.tables import table

    out = ["counters (each event from the copy that counted it; compute = between MPI calls):"]
    for rank in sorted(counters):
        c = counters[rank]
        rows = [("RANK", "EVENT", "COPY", "UNIT", "TOTAL", "COMPUTE", "IN MPI", "TOP FUNCTIONS")]
        for ev, v in sorted(c["events"].items()):
            funcs = ", ".join(f"{name} {value:.0f}" for value, name in sorted(c["functions"].get(ev, []),
                                                                              reverse=True)[:top])
            rows.append((str(rank), ev, str(v["copy"]), v["unit"], f"{v.get('total', 0):.0f}",
                         f"{v.get('compute', 0):.0f}",
                         f"{v.get('mpi', 0):.0f}", funcs))
        out.append(table(rows))
        for ev, pct in sorted(c["anchors"].items()):
            out.append(f"  anchor {ev}: counted by copies {sorted(c['per_copy'][ev])}, compute phases spread {pct:.1f}%"
                       + (" (copies ran the same work)" if pct < 10 else " (copies disagree: check the host)"))
        if c["read_ns"]:
            out.append(f"  one counter read costs {sum(c['read_ns']) / len(c['read_ns']):.0f} ns (two per MPI call)")
    return out
