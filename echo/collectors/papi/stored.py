"""PAPI's rows of a stored run read back: the counts merged per rank, and the events PAPI could not count (the
report, the web pages and the JSON API read them)."""

from __future__ import annotations

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
