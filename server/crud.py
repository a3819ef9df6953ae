"""Queries of the server, keyword-only, on a session."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.report import merged_counters
from echo.store.models import CallSummary, Event, Metric, Proc, Run

INTERPRETERS = ("python", "python3", "bash", "sh")


def program_name(argv: list[str]) -> str:
    """What a run is a run of: the program's file name (the script's, for an interpreter)."""
    names = [Path(a).name for a in argv if not a.startswith("-")]
    for name in names:
        if not any(name == i or name.startswith(i + ".") for i in INTERPRETERS):
            return name
    return names[0] if names else "?"


def list_runs(session: Session, *, program: str | None = None, mode: str | None = None,
              diverged: bool | None = None, since: float | None = None, until: float | None = None,
              limit: int = 100) -> list[Run]:
    q = select(Run).order_by(Run.started_at.desc())
    if mode:
        q = q.where(Run.mode == mode)
    if diverged is not None:
        q = q.where(Run.diverged == diverged)
    if since is not None:
        q = q.where(Run.started_at >= since)
    if until is not None:
        q = q.where(Run.started_at <= until)
    runs = session.scalars(q).all()
    if program:
        runs = [r for r in runs if program_name(r.argv) == program or program in r.program]
    return runs[:limit]


def get_run(session: Session, *, run_id: str) -> Run | None:
    return session.get(Run, run_id)


def procs(session: Session, *, run_id: str) -> list[Proc]:
    return list(session.scalars(select(Proc).where(Proc.run_id == run_id).order_by(Proc.app_rank, Proc.copy)))


def events(session: Session, *, run_id: str, kind: str | None = None) -> list[Event]:
    q = select(Event).where(Event.run_id == run_id).order_by(Event.id)
    if kind:
        q = q.where(Event.kind == kind)
    return list(session.scalars(q))


def metrics(session: Session, *, run_id: str, prefix: str = "") -> list[Metric]:
    q = select(Metric).where(Metric.run_id == run_id, Metric.name.startswith(prefix)).order_by(Metric.id)
    return list(session.scalars(q))


def call_summaries(session: Session, *, run_id: str, app_rank: int | None = None) -> list[CallSummary]:
    q = select(CallSummary).where(CallSummary.run_id == run_id)
    if app_rank is not None:
        q = q.where(CallSummary.app_rank == app_rank)
    return list(session.scalars(q.order_by(CallSummary.app_rank, CallSummary.copy, CallSummary.function)))


def counters(session: Session, *, run_id: str) -> dict[int, dict]:
    return merged_counters(session, run_id)


def divergences(session: Session, *, run_id: str) -> dict:
    """Which copies of which ranks diverged, their first call, and, over the program's history of runs, since
    when its runs diverge."""
    run = session.get(Run, run_id)
    per: dict[tuple[int, int], dict] = {}
    for e in events(session, run_id=run_id):
        if e.kind not in ("divergence", "corrected"):
            continue
        d = per.setdefault((e.app_rank, e.copy), {"app_rank": e.app_rank, "copy": e.copy, "count": 0,
                                                  "first_call": e.call_seq, "corrected": 0, "first": e.message})
        d["count"] += 1
        d["corrected"] += e.kind == "corrected"
        if e.call_seq is not None and (d["first_call"] is None or e.call_seq < d["first_call"]):
            d["first_call"], d["first"] = e.call_seq, e.message
    hist = history(session, program=program_name(run.argv))
    streak_start = None
    for r in hist:  # oldest first: the start of the last run of diverged runs up to this one
        if r.started_at > run.started_at:
            break
        streak_start = (streak_start or r) if r.diverged else None
    return {"run_id": run_id, "diverged": run.diverged, "copies": sorted(per.values(), key=lambda d: (
        d["app_rank"], d["copy"])), "diverging_since": streak_start.id if streak_start else None,
        "diverging_since_time": streak_start.started_at if streak_start else None}


def history(session: Session, *, program: str) -> list[Run]:
    """Every run of a program, oldest first."""
    return list(reversed(list_runs(session, program=program, limit=10_000)))
