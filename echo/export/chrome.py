"""Chrome/Perfetto trace (the Trace Event Format's JSON object form): one process per application rank
(pid = rank), one thread per copy (tid = copy, named with its role), every MPI call a complete slice ("X") with
its communicator, peer, tag and bytes in args, and the store's events that name a call (divergences, exclusions,
deaths) as instant events on the copy's track at that call. Timestamps in microseconds from the run's earliest
clock origin. Reads the record files (every call) and the store (roles, events)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.export.source import Process, counter_sets, iter_with_progress, procs_of, record_processes
from echo.runformat.records import FLAG_ERROR
from echo.store.models import Event, Metric, Run

PEERS = {-2: "MPI_ANY_SOURCE", -3: "MPI_PROC_NULL"}
COMMS = {0: "MPI_COMM_WORLD", 1: "MPI_COMM_SELF"}


def communicator(comm: int) -> str:
    return COMMS.get(comm, f"communicator {comm}")


def call_args(comm: int, peer: int, tag: int, nbytes: int, seq: int, flags: int) -> dict:
    """A call's args as the trace shows them: what the record does not have (-1) is left out."""
    args: dict = {"seq": seq}
    if comm >= 0:
        args["communicator"] = communicator(comm)
    if peer != -1:
        args["peer"] = PEERS.get(peer, peer)
    if tag != -1:
        args["tag"] = tag
    args["bytes"] = nbytes
    if flags & FLAG_ERROR:
        args["error"] = True
    return args


def _slices(out: TextIO, p: Process) -> None:
    r = p.records.records
    names = p.records.function_names()
    starts = p.starts() * 1e6
    durs = (p.ends() * 1e6) - starts
    for i in range(len(r)):
        args = call_args(int(r["comm"][i]), int(r["peer"][i]), int(r["tag"][i]), int(r["bytes"][i]),
                         int(r["seq"][i]), int(r["flags"][i]))
        a = json.dumps(args, separators=(",", ":"))
        out.write(f',\n{{"name":"{names[i]}","cat":"MPI","ph":"X","pid":{p.app_rank},"tid":{p.copy},'
                  f'"ts":{starts[i]:.3f},"dur":{durs[i]:.3f},"args":{a}}}')


def write(session: Session, run: Run, output: Path | None) -> str | None:
    procs = procs_of(session, run)
    processes, origin = record_processes(run, procs)
    sets = counter_sets(session.scalars(select(Metric).where(Metric.run_id == run.id)).all())
    events = session.scalars(select(Event).where(Event.run_id == run.id, Event.call_seq.is_not(None),
                                                 Event.app_rank.is_not(None), Event.copy.is_not(None))).all()
    by_track: dict[tuple[int, int], list[Event]] = {}
    for e in events:
        by_track.setdefault((e.app_rank, e.copy), []).append(e)
    meta = {"run": run.id, "program": run.program, "argv": run.argv, "mode": run.mode, "mpi": run.mpi_library,
            "clock_origin_unix_s": origin,
            "roles": {f"rank {p.app_rank} copy {p.copy}": p.role for p in procs},
            "counter_sets": {f"rank {r} copy {c}": evs for (r, c), evs in sorted(sets.items())}}
    out = sys.stdout if output is None else open(output, "w")  # closed below (stdout is not)
    try:
        out.write(f'{{"displayTimeUnit":"ms","otherData":{json.dumps(meta)},"traceEvents":[\n')
        first = True
        for rank in sorted({p.app_rank for p in processes}):
            out.write(("" if first else ",\n") + json.dumps(
                {"name": "process_name", "ph": "M", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}}))
            out.write(",\n" + json.dumps(
                {"name": "process_sort_index", "ph": "M", "pid": rank, "tid": 0, "args": {"sort_index": rank}}))
            first = False
        for p in iter_with_progress("chrome", processes):
            label = f"copy {p.copy}" + (f" ({p.role})" if p.role else "")
            for name, args in (("thread_name", {"name": label}), ("thread_sort_index", {"sort_index": p.copy})):
                out.write(",\n" + json.dumps({"name": name, "ph": "M", "pid": p.app_rank, "tid": p.copy,
                                              "args": args}))
            _slices(out, p)
            seqs = p.records.records["seq"]
            starts = p.starts()
            for e in by_track.get((p.app_rank, p.copy), []):
                # at the start of the call it names (or the next one recorded: a ring holds the last calls), or the
                # end of the records when it is past them (a death)
                i = min(int(seqs.searchsorted(e.call_seq)), len(seqs) - 1) if len(seqs) else -1
                ts = float(starts[i]) * 1e6 if i >= 0 else 0.0
                out.write(",\n" + json.dumps({"name": e.kind, "cat": "echo", "ph": "i", "s": "t", "pid": p.app_rank,
                                              "tid": p.copy, "ts": round(ts, 3),
                                              "args": {"call": e.call_seq, "message": e.message}}))
        out.write("\n]}\n")
    finally:
        if output is not None:
            out.close()
    if output is None:
        return None
    calls = sum(len(p.records.records) for p in processes)
    return (f"wrote run {run.id} as a Chrome trace to {output}: {calls} calls on {len(processes)} tracks "
            "(open it in ui.perfetto.dev or chrome://tracing)")
