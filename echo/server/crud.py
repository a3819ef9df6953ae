"""Queries of the server, keyword-only, on a session."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from echo.collectors import roles
from echo.report import copies_text, roles_count_text
from echo.store.models import CallSummary, Event, Metric, Proc, Run

INTERPRETERS = ("python", "python3", "bash", "sh")


def program_name(argv: list[str]) -> str:
    """What a run is a run of: the program's file name (the script's, for an interpreter)."""
    at = program_at(argv)
    return Path(argv[at]).name if at is not None else "?"


def program_at(argv: list[str]) -> int | None:
    """Where the program is in a run's command line: its first word that is neither an option nor an
    interpreter (the first word that is not an option, when all are interpreters)."""
    words = [i for i, a in enumerate(argv) if not a.startswith("-")]
    for i in words:
        name = Path(argv[i]).name
        if not any(name == it or name.startswith(it + ".") for it in INTERPRETERS):
            return i
    return words[0] if words else None


def list_runs(session: Session, *, program: str | None = None, mode: str | None = None, status: str | None = None,
              diverged: bool | None = None, since: float | None = None, until: float | None = None,
              limit: int = 100, offset: int = 0) -> list[Run]:
    """The runs that match, newest first: `limit` of them from the `offset`-th."""
    return page_of_runs(session, program=program, mode=mode, status=status, diverged=diverged, since=since,
                        until=until, limit=limit, offset=offset)[0]


def page_of_runs(session: Session, *, program: str | None = None, mode: str | None = None, status: str | None = None,
                 diverged: bool | None = None, since: float | None = None, until: float | None = None,
                 limit: int = 100, offset: int = 0) -> tuple[list[Run], int]:
    """(the runs that match, newest first, `limit` of them from the `offset`-th; how many match in all). A program
    is matched by its name exactly (program_name: `ring` is neither `ringer` nor a directory's `ring2/ring`)."""
    q = select(Run.id, Run.argv).order_by(Run.started_at.desc(), Run.id)
    if mode:
        q = q.where(Run.mode == mode)
    if status:
        q = q.where(Run.status == status)
    if diverged is not None:
        q = q.where(Run.diverged == diverged)
    if since is not None:
        q = q.where(Run.started_at >= since)
    if until is not None:
        q = q.where(Run.started_at <= until)
    # the name is the command line's program word: matched here, not in SQL (the argv is JSON)
    ids = [i for i, argv in session.execute(q) if not program or program_name(argv) == program]
    chosen = ids[offset:offset + limit]
    runs = {r.id: r for r in session.scalars(select(Run).where(Run.id.in_(chosen)))} if chosen else {}
    return [runs[i] for i in chosen], len(ids)


def statuses(session: Session) -> list[str]:
    """The statuses runs of the store have (the list's filter offers them)."""
    return sorted(session.scalars(select(Run.status).distinct()))


def modes(session: Session) -> list[str]:
    return sorted(session.scalars(select(Run.mode).distinct()))


def get_run(session: Session, *, run_id: str) -> Run | None:
    return session.get(Run, run_id)


# a process as the pages and the API read it: the procs table's columns as attributes, read-only
ProcRow = namedtuple("ProcRow", [c.key for c in Proc.__table__.columns])  # type: ignore[misc]


def procs(session: Session, *, run_id: str, app_rank: int | None = None) -> list[ProcRow]:
    """The run's processes (of one rank), by rank then copy, as ProcRows: a 4096 x 4 run's 16384 are read in a
    fraction of the time as many ORM objects (or SQLAlchemy rows, whose attributes are slow to read) take."""
    q = select(*Proc.__table__.columns).where(Proc.run_id == run_id)
    if app_rank is not None:
        q = q.where(Proc.app_rank == app_rank)
    return [ProcRow(*r) for r in session.connection().execute(q.order_by(Proc.app_rank, Proc.copy))]


def events(session: Session, *, run_id: str, kind: str | None = None, app_rank: int | None = None) -> list[Event]:
    q = select(Event).where(Event.run_id == run_id).order_by(Event.id)
    if kind:
        q = q.where(Event.kind == kind)
    if app_rank is not None:
        q = q.where(Event.app_rank == app_rank)
    return list(session.scalars(q))


def metrics(session: Session, *, run_id: str, prefix: str = "") -> list[Metric]:
    q = select(Metric).where(Metric.run_id == run_id, Metric.name.startswith(prefix)).order_by(Metric.id)
    return list(session.scalars(q))


def startup_seconds(session: Session, *, run_id: str, functions: tuple[str, ...]) -> dict[tuple[int, int], float]:
    """Seconds each copy of each rank spent in these MPI functions (MPI_Init, MPI_Finalize), {(rank, copy):
    seconds}: only their few rows of the call summaries are read."""
    q = select(CallSummary.app_rank, CallSummary.copy, func.sum(CallSummary.time_total)).where(
        CallSummary.run_id == run_id, CallSummary.function.in_(functions)).group_by(CallSummary.app_rank,
                                                                                    CallSummary.copy)
    return {(rank, copy): t for rank, copy, t in session.connection().execute(q)}  # summed by the database


def call_summaries(session: Session, *, run_id: str, app_rank: int | None = None) -> list[CallSummary]:
    q = select(CallSummary).where(CallSummary.run_id == run_id)
    if app_rank is not None:
        q = q.where(CallSummary.app_rank == app_rank)
    return list(session.scalars(q.order_by(CallSummary.app_rank, CallSummary.copy, CallSummary.function)))


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
    mine = next(s for s in series(session, program=program_name(run.argv)) if run in s.runs)
    # the start of the last streak of diverged runs up to this one (deliberate injections are no part of it)
    streak_start = streaks([r for r in mine.runs if r.started_at <= run.started_at])[0]
    return {"run_id": run_id, "diverged": run.diverged, "copies": sorted(per.values(), key=lambda d: (
        d["app_rank"], d["copy"])), "diverging_since": streak_start.id if streak_start else None,
        "diverging_since_time": streak_start.started_at if streak_start else None}


def history(session: Session, *, program: str) -> list[Run]:
    """Every run of a program, oldest first."""
    return list(reversed(list_runs(session, program=program, limit=10_000)))


@dataclass
class Series:
    """Runs of one configuration (a nightly series): the same program and arguments, mode, ranks, copies per rank,
    roles and perturbation. Only its own runs make its trend and its streaks."""

    label: str
    runs: list[Run] = field(default_factory=list)  # oldest first
    diverging_since: Run | None = None  # the first run of the last streak of diverged runs, if the last diverged
    clean_since: Run | None = None  # the first run of the last streak of runs whose copies agreed


def deliberate(run: Run) -> bool:
    """A run that differs on purpose: an injection (a flipped bit, a slowed or killed copy) or a perturbation.
    It is expected to diverge, so it neither starts a streak of divergence nor ends a clean one."""
    return bool(run.injections) or bool(roles.varied(run.role_values))


def streaks(runs: list[Run]) -> tuple[Run | None, Run | None]:
    """(diverging since, clean since) over runs oldest first, deliberate runs left out: the first run of the
    trailing streak of diverged runs, or of runs whose copies agreed (one of the two is None)."""
    since: Run | None = None
    diverging = False
    for r in runs:
        if deliberate(r):
            continue
        if since is None or r.diverged != diverging:
            since, diverging = r, r.diverged
    return (since, None) if diverging else (None, since)


def series(session: Session, *, program: str) -> list[Series]:
    """A program's runs grouped by configuration, the series whose last run is newest first."""
    runs = history(session, program=program)
    roles_of: dict[str, dict[str, int]] = {}  # each run's roles and their processes, in order (roles_count_text)
    if runs:
        q = select(Proc.run_id, Proc.role, func.count(), func.min(Proc.real_rank)).where(
            Proc.run_id.in_([r.id for r in runs])).group_by(Proc.run_id, Proc.role).order_by(
            Proc.run_id, func.min(Proc.real_rank))
        for run_id, role, n, _ in session.connection().execute(q):
            roles_of.setdefault(run_id, {})[role] = n
    groups: dict[tuple, Series] = {}
    for r in runs:
        at = program_at(r.argv)
        words = [program_name(r.argv), *(r.argv[at + 1:] if at is not None else [])]
        key = (tuple(words), r.mode, r.nranks, tuple(r.copies), roles_count_text(roles_of.get(r.id, {})),
               tuple(sorted(r.role_values.items())))
        how = roles.varied(r.role_values)
        label = (f"{' '.join(words)}: {r.mode}, {r.nranks} rank{'s' if r.nranks != 1 else ''} x "
                 f"{copies_text(r.copies)} copies, roles {key[4] or 'none recorded'}"
                 + (f", {how[0]['word']} {how[1]}" if how else ""))
        groups.setdefault(key, Series(label)).runs.append(r)
    for s in groups.values():
        s.diverging_since, s.clean_since = streaks(s.runs)
    return sorted(groups.values(), key=lambda s: -s.runs[-1].started_at)
