"""Reading runs back from the store: listing and the terminal report (exports: echo/export/); each role's section
of the report is the role's own (its Role's report, through echo/collectors/roles.py)."""

from __future__ import annotations

import time

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from echo.collectors import roles
from echo.store.models import CallSummary, Event, Proc, Run
from echo.tables import table

# what a reader must see first: divergences, then what was corrected, then failures; the roles place their own
# kinds among these (their Role's events: a memcheck error after the corrections, PAPI's left-out events after
# the injections that did not fire)
EVENT_ORDER = {"divergence": 0, "clocks-apart": 0, "copy-parted": 0, "corrected": 1, "unvoted": 2,
               "process-ended-abnormally": 3, "copy-aborted": 3, "records-damaged": 4, "records-stopped": 4,
               "injection-not-fired": 5, "injection": 8, "perf-not-judged": 9,
               "slow-host": 10, "slowness": 11, "exclusion": 12}
BAD_EVENTS = ("divergence", "process-ended-abnormally")  # shown as failures on the run page, with the roles' own


def event_order() -> dict[str, int]:
    """Where each kind of event is listed (the report, the run page): echo's and every role's."""
    return {**EVENT_ORDER, **{kind: how["order"] for kind, how in roles.event_kinds().items()}}


def in_order(events: list[Event]) -> list[Event]:
    """Events as a reader must see them (event_order), kinds nobody placed last."""
    order = event_order()
    return sorted(events, key=lambda e: order.get(e.kind, len(order)))


def bad_events() -> tuple[str, ...]:
    """The kinds of events the run page marks as failures: echo's and the roles' ("bad" in their Role's events)."""
    return BAD_EVENTS + tuple(kind for kind, how in roles.event_kinds().items() if how.get("bad"))


class UnknownRun(LookupError):
    pass


def find_run(session: Session, run_id: str | None) -> Run:
    """The run named (a unique prefix is enough), or the latest one."""
    if run_id is None:
        run = session.scalars(select(Run).order_by(Run.started_at.desc()).limit(1)).first()
        if run is None:
            raise UnknownRun("the store has no runs yet: run a program with echorun first")
        return run
    runs = session.scalars(select(Run).where(Run.id.startswith(run_id)).limit(2)).all()
    if len(runs) != 1:
        raise UnknownRun(f"no run {run_id!r} in the store (mpiecho runs lists them)" if not runs
                         else f"{run_id!r} names more than one run; give more of its id")
    return runs[0]


def list_runs(engine: Engine, limit: int = 20) -> str:
    with Session(engine) as s:
        runs = s.scalars(select(Run).order_by(Run.started_at.desc()).limit(limit)).all()
        if not runs:
            return "no runs stored yet"
        rows = [("RUN", "STARTED", "PROGRAM", "MODE", "RANKS", "COPIES", "STATUS", "TIME", "INJECTIONS")]
        for r in runs:
            rows.append((r.id, time.strftime("%Y-%m-%d %H:%M", time.localtime(r.started_at)), r.program[-30:],
                         r.mode, str(r.nranks), copies_text(r.copies), f"{r.status} ({r.exit_status})",
                         f"{r.duration:.1f} s", injections_brief(r.injections)))
        return table(rows)


def injections_brief(injections: list[dict] | None) -> str:
    """"-", or how many injections fired of those planned ("1 of 2 fired")."""
    if not injections:
        return "-"
    return f"{sum(i['fired'] for i in injections)} of {len(injections)} fired"


def roles_text(procs: list[Proc]) -> str:
    """Each role and how many processes had it, in the order they first appear."""
    counts: dict[str, int] = {}
    for p in procs:
        counts[p.role] = counts.get(p.role, 0) + 1
    return roles_count_text(counts)


def roles_count_text(counts: dict[str, int]) -> str:
    """Each role and how many processes had it ({role: processes}, in the order they first appear)."""
    return ", ".join(f"{role} x{n}" if n > 1 else role for role, n in counts.items())


def who(e: Event) -> str:
    """"rank R copy C: " before an event's message, as much of it as the event has and its message does not say."""
    if e.app_rank is None or e.message.startswith("application rank"):
        return ""
    return f"rank {e.app_rank}" + (f" copy {e.copy}" if e.copy is not None else "") + ": "


def not_judged(events: list[Event]) -> list[tuple[str, str]]:
    """The perf-not-judged events grouped by reason: (reason, the processes it applies to), one per reason."""
    by_reason: dict[str, list[str]] = {}
    for e in events:
        if e.kind == "perf-not-judged":
            by_reason.setdefault(e.message, []).append(f"rank {e.app_rank} copy {e.copy}")
    return [(why, ", ".join(who) if len(who) <= 4 else f"{len(who)} processes") for why, who in by_reason.items()]


def copies_verdict(run: Run) -> str:
    """What the comparison of copies says, without claiming agreement where copies differ on purpose."""
    if run.diverged:
        return "DIVERGED"
    how = roles.varied(run.role_values)
    if how:
        return how[0]["report"].format(value=how[1])
    return "agree (or were not compared)"


def copies_text(copies: list[int]) -> str:
    return str(copies[0]) if len(set(copies)) == 1 else ",".join(map(str, copies))


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def report(engine: Engine, run_id: str | None = None, top: int = 5) -> str:
    with Session(engine) as s:
        run = find_run(s, run_id)
        procs = s.scalars(select(Proc).where(Proc.run_id == run.id).order_by(Proc.app_rank, Proc.copy)).all()
        events = s.scalars(select(Event).where(Event.run_id == run.id).order_by(Event.id)).all()
        events = in_order(events)
        sums = s.scalars(select(CallSummary).where(CallSummary.run_id == run.id)).all()
        out = [
            f"run {run.id}",
            f"  program  {' '.join(run.argv)}",
            f"  started  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.started_at))} on {run.host}, "
            f"{run.duration:.1f} s, exit status {run.exit_status} ({run.status})",
            f"  mode     {run.mode}",
            f"  ranks    {run.nranks}, copies {copies_text(run.copies)}, {run.nprocs} processes",
            f"  roles    {roles_text(procs)}",
            f"  copies   {copies_verdict(run)}",
            *([f"  file view {run.role_values['file-view']} (the copies' files: docs/fileview.md)"]
              if "file-view" in run.role_values else []),
            f"  MPI      {run.mpi_library}",
            f"  files    {run.run_dir}",
            "",
        ]
        if run.injections:
            out.append(f"injections ({injections_brief(run.injections)}):")
            out += [f"  {i['text']}: {i['note']}" for i in run.injections]
            out.append("")
        if events:
            out.append(f"events ({len(events)}):")
            out += [f"  {e.kind}: {who(e)}{e.message}" for e in events if e.kind != "perf-not-judged"]
            out += [f"  perf-not-judged: {who}: {why}" for why, who in not_judged(events)]
            out.append("")
        rows = [("RANK", "COPY", "ROLE", "STATE", "CALLS", "BYTES", "TIME IN MPI", "OF WALL")]
        for p in procs:
            share = f"{100 * p.mpi_time / p.wall_time:.1f}%" if p.wall_time > 0 else "-"
            rows.append((str(p.app_rank), str(p.copy), p.role, p.state, str(p.calls), human_bytes(p.bytes),
                         f"{p.mpi_time:.4f} s", share))
        out += ["processes:", table(rows), ""]
        by_rank: dict[int, dict[str, list[float]]] = {}
        for c in sums:
            if c.copy == 0:
                agg = by_rank.setdefault(c.app_rank, {})
                agg[c.function] = [c.calls, c.bytes, c.time_total]
        for section in roles.hooks("report", "registry"):  # each role's results (Valgrind's tools, PAPI's counters)
            lines = section(s, run)
            out += lines + [""] if lines else []
        out.append(f"top {top} functions by time, per rank (representatives):")
        rows = [("RANK", "FUNCTION", "CALLS", "BYTES", "TIME")]
        for rank in sorted(by_rank):
            for name, (calls, nbytes, t) in sorted(by_rank[rank].items(), key=lambda kv: -kv[1][2])[:top]:
                rows.append((str(rank), name, str(int(calls)), human_bytes(nbytes), f"{t:.4f} s"))
        out.append(table(rows))
        return "\n".join(out)

