"""PAPI's sections of the web pages (echo/collectors/roles.py's "pages"): the counters merged per rank and side by side
per copy on the run page (run.html), each copy's counts on a rank's page (rank.html), and the counters' JSON
answer (/api/runs/RUN/counters)."""

from __future__ import annotations

from typing import Any

from echo.charts import grouped_bars, seconds, side_by_side
from echo.collectors.papi.stored import merged_counters, unavailable


def _fmt(v: float, unit: str) -> str:
    return f"{v:,.3f} ms" if unit == "ns" else f"{v:,.0f}" if v >= 1 or v == 0 else f"{v:.3g}"


def counter_charts(counters: dict[int, dict]) -> list[str]:
    """Per unit: each counted event of each rank, one bar per copy that counted it (copies that did not are
    named as such, never drawn as 0); a log scale when the values span more than 100x."""
    by_unit: dict[str, dict[tuple[str, int], float]] = {}
    for rank, c in sorted(counters.items()):
        for ev, copies in sorted(c["per_copy"].items()):
            for copy, v in sorted(copies.items()):
                if "total" in v:  # PAPI's nanosecond clocks shown in ms
                    unit = v.get("unit") or "count"
                    value = v["total"] / 1e6 if unit == "ns" else v["total"]
                    by_unit.setdefault(unit, {})[f"rank {rank} {ev}", copy] = value
    out = []
    for unit, values in sorted(by_unit.items()):
        groups = list(dict.fromkeys(label for label, _ in values))
        shown = "ms" if unit == "ns" else unit
        out.append(grouped_bars(f"counters in {shown}, side by side per copy", groups,
                                sorted({copy for _, copy in values}), values, f"total per process ({shown})",
                                "not counted", lambda v, u=unit: _fmt(v, u), gid=f"counters-{shown}"))
    return out


def derived_metrics(counters: dict[int, dict]) -> list[tuple[int, int, str, float]]:
    """(rank, copy, name, value) of metrics derived from events one copy counted together: instructions per
    cycle where PAPI_TOT_INS and PAPI_TOT_CYC were in the same set."""
    out = []
    for rank, c in sorted(counters.items()):
        ins, cyc = c["per_copy"].get("PAPI_TOT_INS", {}), c["per_copy"].get("PAPI_TOT_CYC", {})
        for copy in sorted(set(ins) & set(cyc)):
            if cyc[copy].get("total"):
                out.append((rank, copy, "instructions per cycle (PAPI_TOT_INS / PAPI_TOT_CYC)",
                            ins[copy].get("total", 0.0) / cyc[copy]["total"]))
    return out


def run_context(session: Any, run: Any, procs: list, events: list) -> dict[str, Any] | None:
    """The run page's counters: merged per rank (each event from the copy that counted it), side by side per
    copy, and the metrics derived from them; None when no copy counted."""
    merged = merged_counters(session, run.id)
    if not merged:
        return None
    return dict(counters=sorted(merged.items()), counter_plots=counter_charts(merged),
                derived=derived_metrics(merged))


SCOPES = (("total", "whole process"), ("compute", "between MPI calls"), ("mpi", "inside MPI calls"))


def counted(v: float, unit: str) -> str:
    """A count in its unit: PAPI's nanosecond clocks as durations, other counts as numbers with their unit."""
    if unit == "ns":
        return seconds(v / 1e9)
    return f"{v:,.0f}" + ("" if unit == "count" else f" {unit}")


def rank_context(session: Any, run: Any, rank: int, procs: list) -> dict[str, Any] | None:
    """A rank's page: each counted event of each copy side by side (the whole process, between MPI calls and
    inside them), in its unit; "not counted" where a copy's set did not count it (never a 0). One table part per
    unit, its bars on one scale, a log scale where the values span more than 100x; then the events asked for that
    PAPI cannot count here, with its reason, not counted by any copy. None when no copy counted and none was
    missed."""
    c = merged_counters(session, run.id, app_rank=rank).get(rank) or {"per_copy": {}}
    missed = unavailable(session, run.id)  # asked for, not countable here: no copy counted them
    if not c["per_copy"] and not missed:
        return None
    copies = [p.copy for p in procs]
    by_unit: dict[str, list[tuple[str, str, list]]] = {}
    for ev, per in sorted(c["per_copy"].items()):
        unit = next(iter(per.values())).get("unit", "count")
        for scope, words in SCOPES:
            values = [per[k].get(scope) if k in per else None for k in copies]
            if any(v is not None for v in values):
                by_unit.setdefault(unit, []).append((ev, words, values))
    parts = []
    for unit, rows in sorted(by_unit.items()):
        cells, log = side_by_side([values for _, _, values in rows], lambda v, u=unit: counted(v, u), "not counted")
        parts.append(dict(unit="time (PAPI counts it in ns)" if unit == "ns" else unit, log=log,
                          rows=[(ev, words, row) for (ev, words, _), row in zip(rows, cells, strict=True)]))
    return dict(counter_parts=parts, counter_copies=copies,
                counter_missed=[(ev, why, side_by_side([[None] * len(copies)], str, "not counted")[0][0])
                                for ev, why in missed])


def counters_answer(session: Any, run_id: str) -> dict[str, dict]:
    """Per rank: every counted event, from the copy that counted it, and the anchors' spread."""
    return {str(k): v for k, v in merged_counters(session, run_id).items()}
