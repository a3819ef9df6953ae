"""Run directories of thousands of ranks, as echorun and the preload library leave them (plan, run.json, a record file,
a status and an event file per process), for the benchmarks and tests of the pages at sizes this machine cannot run.
Record files are written by echo/runformat/records.py (the format's owner), the plan by echo/runformat/runfiles.py; the
store reads them with its real ingest. The program modelled: an iterative halo exchange (Irecv, Isend, Waitall with both
neighbours, an Allreduce of the residual) between compute phases, each copy a little slower than its representative in
MPI (it waits for what the representative received)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from echo.runformat.records import RECORD, write
from echo.runformat.runfiles import plan_text, record_file, status_file, write_meta, write_run_dir

FUNCTIONS = ["MPI_Init", "MPI_Comm_rank", "MPI_Comm_size", "MPI_Irecv", "MPI_Isend", "MPI_Waitall", "MPI_Allreduce",
             "MPI_Finalize"]
LOOP = [3, 3, 4, 4, 5, 6]  # an iteration's calls, by index in FUNCTIONS: two Irecv, two Isend, Waitall, Allreduce


@dataclass
class Divergence:
    """Copy `copy` of rank `rank` hands MPI other data in `count` calls from call `first` on (in every call)."""

    rank: int
    copy: int
    first: int
    count: int = 1


@dataclass
class Plan:
    nranks: int
    copies: int
    iterations: int = 60  # 6 calls each, plus MPI_Init, rank, size and MPI_Finalize
    program: str = "./halo"
    run_id: str = "synthetic"
    args: list[str] = field(default_factory=lambda: ["-n", "100"])
    started_at: float = 1_790_000_000.0
    mode: str = "clones"
    divergences: list[Divergence] = field(default_factory=list)
    died: dict[tuple[int, int], int] = field(default_factory=dict)  # (rank, copy): the call it died in (SIGKILL)
    slow: dict[tuple[int, int], float] = field(default_factory=dict)  # (rank, copy): its compute phases take 2.0x
    seed: int = 1
    exit_status: int | None = None  # None: as the plan's divergences and deaths make it


def calls_of(plan: Plan) -> np.ndarray:
    """The function index of each call of a process."""
    return np.array([0, 1, 2, *LOOP * plan.iterations, 7], dtype=np.uint16)


def records(plan: Plan, rank: int, copy: int, rng: np.random.Generator) -> np.ndarray:
    fn = calls_of(plan)
    n = len(fn)
    r = np.zeros(n, dtype=RECORD)
    r["seq"] = np.arange(n)
    r["fn"] = fn
    r["comm"] = 0x44000000
    r["peer"] = np.where(np.isin(fn, (3, 4)), (rank + np.tile([1, -1], n)[:n]) % plan.nranks, -1)
    r["bytes"] = np.where(np.isin(fn, (3, 4)), 8000, np.where(fn == 6, 8, 0))
    # ns: a compute phase before each call, the call's own time; copies wait a little longer in MPI
    compute = rng.gamma(4.0, 50_000.0, n) * plan.slow.get((rank, copy), 1.0) * (fn == 3)
    inside = rng.gamma(2.0, 4_000.0, n) * (1.0 + 0.15 * copy) + np.where(fn == 6, 30_000.0, 0.0)
    inside[0], inside[-1] = 80e6, 2e6  # MPI_Init and MPI_Finalize
    start = np.cumsum(compute + np.concatenate([[0.0], inside[:-1]])) + rng.uniform(0, 1e5)
    r["t_start"] = start.astype(np.uint64)
    r["t_end"] = (start + inside).astype(np.uint64)
    died = plan.died.get((rank, copy))
    return r[:died + 1] if died is not None else r


def event_line(plan: Plan, d: Divergence, call: int, fn: int) -> str:
    return json.dumps(dict(kind="divergence", app_rank=d.rank, copy=d.copy, function=FUNCTIONS[fn], call=call,
                           comm=0x44000000, peer=-1, bytes=8, first_byte=3,
                           detail="differs from copy 0 (hash 9f2c41d0 vs 1b77e0aa)"))


def make_run(run_dir: Path, plan: Plan) -> Path:
    """The run directory of `plan`, as if `echorun -n NRANKS --clones COPIES ./halo` had finished in it."""
    run_dir = Path(run_dir)
    procs = [(a * plan.copies + c, a, c, plan.copies, "clone" if c else "rep")
             for a in range(plan.nranks) for c in range(plan.copies)]
    header = [("run_id", plan.run_id), ("run_dir", run_dir), ("app_size", plan.nranks), ("real_size", len(procs)),
              ("mode", plan.mode)]
    write_run_dir(run_dir, plan_text(header, [], procs), {})
    rng = np.random.default_rng(plan.seed)
    fn = calls_of(plan)
    ends = []
    for real, app, copy, ncopies, role in procs:
        r = records(plan, app, copy, rng)
        write(record_file(run_dir, real), app_rank=app, copy=copy, ncopies=ncopies, real_rank=real, pid=10_000 + real,
              start_time=plan.started_at + 0.01, run_id=plan.run_id, host=f"node{app // 64:03d}", role=role,
              mpi_library="Open MPI v5.0.8", functions=FUNCTIONS, records=r)
        end = plan.started_at + float(r["t_end"][-1]) * 1e-9
        ends.append(end)
        died = (app, copy) in plan.died
        status_file(run_dir, real).write_text(f"signal 9 {end:.3f} {10_000 + real} -\n" if died
                                              else f"finalized 0 {end:.3f} {10_000 + real} 0\n")
    for d in plan.divergences:
        calls = range(d.first, min(d.first + d.count, len(fn) - 1))
        (run_dir / "events" / f"{d.rank * plan.copies + d.copy}.jsonl").write_text(
            "".join(event_line(plan, d, c, int(fn[c])) + "\n" for c in calls))
    status = plan.exit_status if plan.exit_status is not None else 20 if plan.divergences else 137 if plan.died else 0
    write_meta(run_dir, dict(run_id=plan.run_id, program=plan.program, argv=[plan.program, *plan.args],
                             nranks=plan.nranks,
                             copies=[plan.copies] * plan.nranks, started_at=plan.started_at,
                             duration=max(ends) - plan.started_at, exit_status=status, mode=plan.mode, host="node000"))
    return run_dir


def store_runs(base: Path, plans: list[Plan], engine: object) -> list[str]:
    """Each plan's run directory made under `base` (by run id) and stored by the real ingest; their ids."""
    from echo.store.ingest import ingest

    return [ingest(make_run(Path(base) / p.run_id, p), engine) for p in plans]
