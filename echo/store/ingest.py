"""Ingesting a finished (or failed) run into the store: the run, each process,
per-(rank, copy, function) call summaries computed in bulk with numpy, and
events (deaths, damaged records). Raw records stay in the run directory.
Re-ingesting a run replaces it, in one transaction."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, delete, insert
from sqlalchemy.orm import Session

from echo import fileview, injections, modes
from echo.collectors import roles
from echo.progress import Progress
from echo.runformat.constants import EXIT_NOT_FIRED
from echo.runformat.procstatus import ProcessEnd, parse_status
from echo.runformat.records import (
    FLAG_ERROR,
    LostCalls,
    RecordFile,
    RecordsError,
    read_all,
    read_lost_file,
    read_restart_lost,
)
from echo.runformat.runfiles import (
    lost_listing,
    metrics_file,
    metrics_listing,
    perf_json_file,
    plan_procs,
    plan_value,
    read_if_there,
    read_meta,
    record_listing,
    status_listing,
)
from echo.sdc import EXIT_CORRECTED, EXIT_DIVERGED, outcome, read_events
from echo.store.models import CallSummary, Event, Metric, Proc, Run, RunValue


def run_mode(meta: dict, run_dir: Path) -> str:
    """clones, sdr or reinit: run.json says it; runs written before it did have their plan's "mode" line."""
    if meta.get("mode") in modes.NAMES:
        return meta["mode"]
    return plan_value(run_dir, "mode") or modes.NAMES[0]


def run_status(exit_status: int, sdc_outcome: str, interrupted: str | None = None) -> str:
    """ok, failed, "interrupted by SIGINT" (echorun was told to stop: `interrupted`, the signal's name), or what
    echo's own exit statuses say (docs/sdc.md): diverged (20), corrected by vote (21), an injection not fired."""
    if interrupted:
        return f"interrupted by {interrupted}"
    if exit_status == 0:
        return "ok"
    if exit_status == EXIT_NOT_FIRED:
        return "injection not fired"
    if (exit_status, sdc_outcome) in ((EXIT_DIVERGED, "diverged"), (EXIT_CORRECTED, "corrected")):
        return sdc_outcome
    return "failed"


def process_state(end: ProcessEnd | None, interrupted: str | None = None) -> str:
    """How the process ended (`end`: its status file's word, None when it left none); in a run echorun was told to
    stop (`interrupted`: the signal it got), a process that had not finished was ended by echo (SIGTERM, then
    SIGKILL): that signal says nothing of the process."""
    if interrupted and (end is None or end.state in ("started", "signal", "finalizing")):
        return f"interrupted by {interrupted}" + (" (never started)" if end is None else "")
    return end.text() if end else "never started"


def joined(recs: list[np.ndarray], field: str) -> np.ndarray:
    """One field of every file's records, end to end (one file's: a view, not a copy)."""
    return recs[0][field] if len(recs) == 1 else np.concatenate([r[field] for r in recs])


def summarize(files: list[RecordFile]) -> tuple[list[dict[str, list]], list[float]]:
    """Per file, per function it called (in its table's order): calls, errors, bytes, time in total, longest; and
    per file its wall time, from its first record's start to its last's end (0 without records).
    One pass of numpy over the records of all the files that share a function table (every process of a run
    has the MPI's): a bin per (file, function called), so the Python work is per row, not per file and record.
    Each bin adds its records in their order, as a pass per file would: the same sums, bit for bit."""
    out: list[dict[str, list]] = [{} for _ in files]
    walls = [0.0] * len(files)
    groups: dict[int, list[int]] = {}
    for i, f in enumerate(files):
        groups.setdefault(id(f.functions), []).append(i)  # records.function_table gives one list per table
    for members in groups.values():
        functions = files[members[0]].functions
        recs = [files[i].records for i in members]
        lens = [len(r) for r in recs]
        if not sum(lens):
            continue
        spt = np.array([files[i].seconds_per_tick for i in members])
        counts = np.array(lens)
        ends = np.cumsum(counts)
        had = np.flatnonzero(counts)  # the files with records
        alone = len(members) == 1  # a file larger than a batch: its fields as they are, no copy, no bins made
        fn = joined(recs, "fn").astype(np.intp)
        if alone:  # a bin per function of the table
            used, key = np.arange(len(functions)), fn
        else:
            used = np.flatnonzero(np.bincount(fn, minlength=len(functions)))  # the functions called, in order
            column = np.zeros(len(functions), np.intp)
            column[used] = np.arange(len(used))
            key = np.repeat(np.arange(len(members)) * len(used), lens) + column[fn]
        t_start, t_end = joined(recs, "t_start"), joined(recs, "t_end")
        dur = (t_end - t_start) * (spt[0] if alone else np.repeat(spt, lens))
        spans = (t_end[ends[had] - 1] - t_start[(ends - counts)[had]]) * spt[had]
        for i, span in zip(had.tolist(), spans.tolist(), strict=True):
            walls[members[i]] = span
        n = len(members) * len(used)
        flags, nbytes = joined(recs, "flags"), joined(recs, "bytes")
        calls = np.bincount(key, minlength=n)
        failed = (flags & FLAG_ERROR).astype(np.float64)
        errors = np.bincount(key, weights=failed, minlength=n) if failed.any() else np.zeros(n)
        total_bytes = np.bincount(key, weights=nbytes.astype(np.float64), minlength=n)
        total = np.bincount(key, weights=dur, minlength=n)
        longest = np.zeros(n)
        np.maximum.at(longest, key, dur)
        bins = np.flatnonzero(calls)
        names = [functions[i] for i in used[bins % len(used)].tolist()]
        for b, name, k, e, nb, t, m in zip((bins // len(used)).tolist(), names, calls[bins].tolist(),
                                           errors[bins].tolist(), total_bytes[bins].tolist(), total[bins].tolist(),
                                           longest[bins].tolist(), strict=True):
            out[members[b]][name] = [k, int(e), int(nb), t, m]
    return out, walls


def read_metrics(run_dir: Path, real: int) -> list[tuple[str, float, str]]:
    """What a process reported about itself: "name<TAB>value<TAB>unit" lines."""
    return read_metrics_file(metrics_file(run_dir, real))


def read_metrics_file(path: str | Path | None) -> list[tuple[str, float, str]]:
    """A metrics file's lines (None: the process left none)."""
    data = read_if_there(path) if path else None
    out = []
    for line in data.decode().splitlines() if data is not None else []:
        name, value, unit = line.split("\t")
        out.append((name, float(value), unit))
    return out


def perf_rows(run_dir: Path) -> tuple[list[dict], list[dict]]:
    """The status timeline of echo/perf.py: an event per change (its call number), a host's share of slow phases,
    and per process the phases compared and those spent non-recommended."""
    path = perf_json_file(run_dir)
    if not path.is_file():
        return [], []
    perf = json.loads(path.read_text())
    events, metrics = [], []
    for p in perf["processes"] + perf.get("tested", []):
        how = " (explicit tests)" if p in perf.get("tested", []) else ""
        for seq, t, status in p["changes"]:
            events.append(dict(kind="slowness", app_rank=p["rank"], copy=p["copy"], call_seq=seq,
                               message=f"{status} at {t:.3f} s on {p['host']}{how}"))
        if p["judged"]:
            metrics += [dict(app_rank=p["rank"], copy=p["copy"], name="perf phases compared", value=p["judged"],
                             unit="phases"),
                        dict(app_rank=p["rank"], copy=p["copy"], name="perf phases non-recommended",
                             value=p["slow"], unit="phases")]
    for p in perf.get("not_judged", []):  # said, so that no one reads "never slow" into an unjudged process
        events.append(dict(kind="perf-not-judged", app_rank=p["rank"], copy=p["copy"],
                           message=f"not judged for slowness: {p['reason']}"))
    for h in perf["hosts"]:
        if h["changes"]:
            spans = ", ".join(f"{status} at {t:.3f} s" for t, status in h["changes"])
            events.append(dict(kind="slow-host", message=f"host {h['host']}: a process was slow in "
                               f"{h['slow_fraction']:.0%} of the compared phases; {spans}"))
    return events, metrics


def exclusion_rows(run_dir: Path) -> list[dict]:
    """SDR's slow replicas excluded, taken back, stopped at the end (echo/modes/sdr.py): an event each, at its call."""
    from echo.modes.sdr import exclusion_text, exclusions

    return [dict(kind="exclusion", app_rank=e.rank, copy=e.replica, call_seq=e.call, message=exclusion_text(e))
            for e in exclusions(run_dir)]


def redeployment_rows(run_dir: Path) -> list[dict]:
    """A Reinit job started again after every process failed (echo/modes/reinit.py): an event per failed deployment."""
    from echo.modes.reinit import earlier_deployments

    return [dict(kind="redeployed", message=line) for line in earlier_deployments(run_dir)]


def lost_calls(path: str | None, real: int, app: int, copy: int, events: list[dict]) -> LostCalls | None:
    """The calls a process made after its records stopped (`path`: its .lost file, None when it left none; their
    summaries join the file's), with an event that says what was kept and what was lost."""
    if path is None:
        return None
    try:
        lost = read_lost_file(path)
    except (RecordsError, ValueError) as e:
        events.append(dict(kind="records-damaged", app_rank=app, copy=copy, message=str(e)))
        return None
    if lost is not None and not lost.ring:  # a ring is the default: its totals, no event
        events.append(dict(kind="records-stopped", app_rank=app, copy=copy, call_seq=lost.stopped_at,
                           message=f"application rank {app} copy {copy} (process {real}): {lost.text()}"))
    return lost


def restart_lost_rows(run_dir: Path) -> list[dict]:
    """Reinit's restarted processes whose records stopped: an event each that says what was kept and what was lost
    (their record files, records/restarts/, are not in the per-process totals: the process rows are the planned
    processes')."""
    rows = []
    for rank, pid, lost in read_restart_lost(run_dir):
        if isinstance(lost, RecordsError):
            rows.append(dict(kind="records-damaged", app_rank=rank, message=str(lost)))
        elif not lost.ring:
            rows.append(dict(kind="records-stopped", app_rank=rank, call_seq=lost.stopped_at,
                             message=f"application rank {rank}, restarted process (pid {pid}): {lost.text()}"))
    return rows


PROC_COLUMNS = ("run_id", "real_rank", "app_rank", "copy", "role", "host", "pid", "state", "calls", "bytes",
                "mpi_time", "wall_time")
SUMMARY_COLUMNS = ("run_id", "app_rank", "copy", "function", "calls", "errors", "bytes", "time_total", "time_max")
CHUNK_BYTES = 32 << 20  # the record files read at once: a run's records are summarized a chunk at a time, in a
# buffer reused (allocated once, its pages faulted in once, and in the cache when summarized)


def chunks(planned: list[tuple[int, int, int, str]], listed: dict[int, tuple[str, int]]) -> list[list]:
    """The planned processes in order, in runs whose record files hold at most CHUNK_BYTES together (or one
    process whose file is larger): read and summarized at once, without holding a whole run's records (a --trace
    run's may be more than memory) nor paying per file."""
    out: list[list] = [[]]
    size = 0
    for proc in planned:
        this = listed[proc[0]][1] if proc[0] in listed else 0
        if out[-1] and size + this > CHUNK_BYTES:
            out.append([])
            size = 0
        out[-1].append(proc)
        size += this
    return out


def insert_tuples(session: Session, table: type, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """`rows` (values of `columns`, in their order) inserted into `table` by one executemany of the driver, in the
    session's transaction."""
    if not rows:
        return
    conn = session.connection()
    compiled = table.__table__.insert().compile(dialect=conn.dialect, column_keys=list(columns))
    if compiled.positional:  # SQLite's "?": the values in the statement's order
        order = [columns.index(name) for name in compiled.positiontup]
        params: list = rows if order == list(range(len(columns))) else [tuple(r[i] for i in order) for r in rows]
    else:  # PostgreSQL's drivers: named parameters
        params = [dict(zip(columns, r, strict=True)) for r in rows]
    conn.exec_driver_sql(str(compiled), params)


def ingest(run_dir: str | Path, engine: Engine, meta: dict | None = None) -> str:
    """Store the run in `run_dir`; returns its id. `meta`: what echorun knows of the run, when its run.json may be
    older (a full disk refused the one written after the job)."""
    run_dir = Path(run_dir)
    meta = meta or read_meta(run_dir)
    run_id = meta["run_id"]
    procs, summaries, events, metrics = [], [], [], []
    mpi_library = ""
    planned_procs = plan_procs(run_dir)
    listed = record_listing(run_dir)  # one listing per folder: only the files there are are opened
    statuses, metric_files, losts = status_listing(run_dir), metrics_listing(run_dir), lost_listing(run_dir)
    progress = Progress("store", sum(size for _, size in listed.values()), "MiB")  # reading the records: most of it
    done = 0
    hooks = roles.hooks("process_metrics")  # what a role reads in the record file (PAPI's slots)
    buffer = np.empty(CHUNK_BYTES, np.uint8)  # reused: a chunk's records are summarized before the next is read
    for chunk in chunks(planned_procs, listed):
        reals = [real for real, *_ in chunk if real in listed]
        read = dict(zip(reals, read_all([listed[real][0] for real in reals], [listed[real][1] for real in reals],
                                        buffer), strict=True))
        whole = [f for f in read.values() if isinstance(f, RecordFile)]
        per_file = dict(zip(map(id, whole), zip(*summarize(whole), strict=True), strict=True))
        for real, app, copy, role in chunk:
            state = process_state(parse_status(read_if_there(statuses[real]) if real in statuses else None),
                                  meta.get("interrupted"))
            f = read.get(real)
            if isinstance(f, RecordsError):
                if listed[real][1] or real not in losts:  # else: refused by the disk
                    events.append(dict(kind="records-damaged", app_rank=app, copy=copy, message=str(f)))
                f = None
            if f is not None and f.damage:
                events.append(dict(kind="records-damaged", app_rank=app, copy=copy, message=f.damage))
            if not state.startswith(("finalized", "stopped")):  # stopped: SDR's excluded replica, at the end
                events.append(dict(kind="process-ended-abnormally", app_rank=app, copy=copy,
                                   call_seq=int(f.records["seq"][-1]) if f is not None and len(f.records) else None,
                                   message=f"application rank {app} copy {copy} (process {real}): {state}"))
            own = read_metrics_file(metric_files.get(real))
            metrics += [dict(app_rank=app, copy=copy, name=n, value=v, unit=u) for n, v, u in own]
            for process_metrics in hooks:
                metrics += [dict(app_rank=app, copy=copy, name=n, value=v, unit=u)
                            for n, v, u in process_metrics(f, own)]
            wall = 0.0
            host, pid = "", 0
            per_function: dict[str, list] = {}  # calls, errors, bytes, time in total, longest
            if f is not None:
                mpi_library = mpi_library or f.mpi_library
                host, pid = f.host, f.pid
                per_function, wall = per_file[id(f)]
            lost = lost_calls(losts.get(real), real, app, copy, events)
            for name, (k, errors, nbytes, total, longest) in (lost.functions if lost else {}).items():
                row = per_function.setdefault(name, [0, 0, 0, 0.0, 0.0])
                row[:4] = [row[0] + k, row[1] + errors, row[2] + nbytes, row[3] + total]
                row[4] = max(row[4], longest)
            summaries += [(run_id, app, copy, name, *row) for name, row in per_function.items()]
            rows = per_function.values()
            procs.append((run_id, real, app, copy, role, host, pid, state, sum(row[0] for row in rows),
                          sum(row[2] for row in rows), sum(row[3] for row in rows), wall))
            done += 1
            progress.step(listed[real][1] if real in listed else 0,
                          f"{done} of {len(planned_procs)} processes' records read")
    sdc_events = read_events(run_dir)
    kinds = roles.event_kinds()  # a role's event whose C part wrote a whole sentence keeps it alone (PAPI's)
    events = [dict(kind=e.kind, app_rank=e.app_rank, copy=e.copy, call_seq=e.call,
                   message=e.detail if kinds.get(e.kind, {}).get("detail") else e.describe())
              for e in sdc_events if e.kind != injections.REFUSED] + events  # told below, with the plan's text
    planned = injections.check(run_dir, sdc_events)
    events += [dict(kind="injection-not-fired", app_rank=i.rank, copy=i.copy, call_seq=i.call,
                    message=f"{i.text}: {i.note}") for i in planned if not i.fired]
    for rows in roles.hooks("ingest"):  # each role's events and metrics from the files it left
        role_events, role_metrics = rows(run_dir, planned_procs, meta)
        events += role_events
        metrics += role_metrics
    perf_ev, perf_me = perf_rows(run_dir)
    events += perf_ev + exclusion_rows(run_dir) + redeployment_rows(run_dir) + restart_lost_rows(run_dir)
    metrics += perf_me
    run = dict(id=run_id, program=meta["program"], argv=meta["argv"], mode=run_mode(meta, run_dir),
               nranks=meta["nranks"], nprocs=len(procs), copies=meta["copies"], started_at=meta["started_at"],
               duration=meta.get("duration", 0.0), exit_status=meta.get("exit_status", -1),
               status=run_status(meta.get("exit_status", -1), outcome(sdc_events), meta.get("interrupted")),
               diverged=outcome(sdc_events) != "clean",
               host=meta.get("host", ""), mpi_library=mpi_library, run_dir=str(run_dir),
               injections=injections.as_rows(planned))
    values = [dict(name=name, value=value) for name, value in fileview.run_values(run_dir).items()]
    for named in roles.hooks("run_values"):  # a role's values of the run (the perturbation's label)
        values += [dict(name=name, value=value) for name, value in named(run_dir).items() if value is not None]
    with Session(engine) as session, session.begin():
        for table in (CallSummary, Event, Metric, Proc, RunValue):
            session.execute(delete(table).where(table.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))
        session.execute(insert(Run), [run])
        # the processes and their summaries (16,384 and 131,072 rows of a 4096 x 4 run), all of one shape, go in
        # as tuples handed to the driver's executemany: SQLAlchemy's insert spent more time making a dict of
        # parameters per row than the database took inserting them; the other tables' rows may differ in shape
        # (an event without a call), which the ORM's insert handles
        insert_tuples(session, Proc, PROC_COLUMNS, procs)
        insert_tuples(session, CallSummary, SUMMARY_COLUMNS, summaries)
        for table, rows in ((Event, events), (Metric, metrics), (RunValue, values)):
            if rows:
                session.execute(insert(table), [dict(r, run_id=run_id) for r in rows])
    return run_id
