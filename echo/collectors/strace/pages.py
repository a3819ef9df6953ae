"""strace's section of a rank's page: the system calls of each traced copy side by side, from the store's rows
(ingest_rows in this folder); copies that were not traced say so, never 0."""

from __future__ import annotations

from typing import Any

from echo.charts import side_by_side
from echo.collectors.strace.stored import CALLS_OF, stored_counts

SHOWN = 20  # system calls listed one by one (the most made over the rank's traced copies); the rest in one row


def rank_context(session: Any, run: Any, rank: int, procs: list) -> dict[str, Any] | None:
    """Rows of system calls, a cell per copy of the rank: the total, the failed ones, then each system call by how
    many the traced copies made together (the first SHOWN, then the others summed); None when no copy of the rank
    was traced."""
    counts = {copy: values for (_, copy), values in stored_counts(session, run.id, rank).items()}
    if not counts:
        return None
    copies = [p.copy for p in procs]
    totals: dict[str, float] = {}
    for values in counts.values():
        for name, v in values.items():
            if name.startswith(CALLS_OF):
                totals[name] = totals.get(name, 0.0) + v
    ranked = sorted(totals, key=lambda name: (-totals[name], name))
    listed, folded = ranked[:SHOWN], ranked[SHOWN:]

    def row(pick: Any) -> list[float | None]:
        return [pick(counts[k]) if k in counts else None for k in copies]

    labels = ["all system calls", "failed (returned -1)"] + [name.removeprefix(CALLS_OF) for name in listed]
    values = [row(lambda c: c.get("strace system calls", 0.0)), row(lambda c: c.get("strace failed system calls", 0.0))]
    values += [row(lambda c, n=name: c.get(n, 0.0)) for name in listed]
    if folded:
        labels.append(f"the {len(folded)} other system calls")
        values.append(row(lambda c: sum(c.get(n, 0.0) for n in folded)))
    cells, log = side_by_side(values, lambda v: f"{v:,.0f}", "not traced")
    return dict(strace_copies=copies, strace_log=log, strace_rows=list(zip(labels, cells, strict=True)))
