"""strace's rows in the store read back: each traced copy's counts by name (the report and the rank page read
them; ingest_rows in __init__.py writes them)."""

from __future__ import annotations

from typing import Any

CALLS_OF = "strace calls of "  # the prefix of a row counting one system call: "strace calls of openat"


def stored_counts(session: Any, run_id: str, rank: int | None = None) -> dict[tuple[int, int], dict[str, float]]:
    """(rank, copy) -> {row name: value} of every traced copy of the run (of one rank if given), in rank and copy
    order."""
    from sqlalchemy import select

    from echo.store.models import Metric

    query = select(Metric).where(Metric.run_id == run_id, Metric.name.like("strace %"))
    if rank is not None:
        query = query.where(Metric.app_rank == rank)
    out: dict[tuple[int, int], dict[str, float]] = {}
    for m in session.scalars(query.order_by(Metric.app_rank, Metric.copy, Metric.id)):
        out.setdefault((m.app_rank, m.copy), {})[m.name] = m.value
    return out
