"""Reading runs back from the store: listing and the terminal report (exports: echo/export/)."""

from __future__ import annotations

import time

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from echo.store.models import CallSummary, Event, Metric, Proc, Run

# what a reader must see first: divergences, then what was corrected, then failures
EVENT_ORDER = {"divergence": 0, "clocks-apart": 0, "copy-parted": 0, "corrected": 1, "memcheck": 2,
               "process-ended-abnormally": 3, "records-damaged": 4,
               "injection-not-fired": 5, "papi-unavailable": 6, "sensitivity": 7, "injection": 8, "perf-not-judged": 9,
               "slow-host": 10, "slowness": 11, "exclusion": 12}


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
    if run.perturbation:
        return f"varied on purpose ({run.perturbation}): not compared for corruption (mpiecho sensitivity)"
    return "agree (or were not compared)"


def copies_text(copies: list[int]) -> str:
    return str(copies[0]) if len(set(copies)) == 1 else ",".join(map(str, copies))


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def merged_counters(session: Session, run_id: str) -> dict[int, dict]:
    """Per application rank: every counted event (from the copy that counted it) with its total, compute-phase
    and in-MPI counts and its top functions; and the anchor events compared across copies."""
    rows = session.scalars(select(Metric).where(Metric.run_id == run_id, Metric.name.startswith("papi "))).all()
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


def counters_text(counters: dict[int, dict], top: int = 3) -> list[str]:
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


def valgrind_text(metrics: list[Metric]) -> list[str]:
    """Tool results per rank and copy (-1: callgrind slices merged into one profile)."""
    out = ["valgrind (copy -1: the slices of a rank merged):"]
    rows = [("RANK", "COPY", "RESULT", "VALUE")]
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            continue  # per-function costs: the top ones below
        rows.append((str(m.app_rank), str(m.copy), m.name, f"{m.value:.0f} {m.unit}".strip()))
    out.append(table(rows))
    tops: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            fn = m.name.split(" in ", 1)[1].removesuffix(" (slices merged)")
            tops.setdefault((m.app_rank, m.copy), []).append((m.value, fn))
    for (rank, copy), fns in sorted(tops.items()):
        best = ", ".join(f"{fn} {v:.0f}" for v, fn in sorted(fns, reverse=True)[:5])
        out.append(f"  rank {rank} copy {copy} most instructions: {best}")
    return out


def report(engine: Engine, run_id: str | None = None, top: int = 5) -> str:
    with Session(engine) as s:
        run = find_run(s, run_id)
        procs = s.scalars(select(Proc).where(Proc.run_id == run.id).order_by(Proc.app_rank, Proc.copy)).all()
        events = s.scalars(select(Event).where(Event.run_id == run.id).order_by(Event.id)).all()
        events = sorted(events, key=lambda e: EVENT_ORDER.get(e.kind, len(EVENT_ORDER)))
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
        tools = s.scalars(select(Metric).where(Metric.run_id == run.id, Metric.name.regexp_match(
            "^(memcheck|callgrind|cachegrind|massif) ")).order_by(Metric.app_rank, Metric.copy, Metric.id)).all()
        if tools:
            out += valgrind_text(tools) + [""]
        counters = merged_counters(s, run.id)
        if counters:
            out += counters_text(counters) + [""]
        out.append(f"top {top} functions by time, per rank (representatives):")
        rows = [("RANK", "FUNCTION", "CALLS", "BYTES", "TIME")]
        for rank in sorted(by_rank):
            for name, (calls, nbytes, t) in sorted(by_rank[rank].items(), key=lambda kv: -kv[1][2])[:top]:
                rows.append((str(rank), name, str(int(calls)), human_bytes(nbytes), f"{t:.4f} s"))
        out.append(table(rows))
        return "\n".join(out)

