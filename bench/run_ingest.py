"""Ingest benchmark: a real run with 10 million call records (2 ranks x 5
million MPI_Iprobe calls), ingested into a fresh SQLite store; and a store of
4096 ranks x 4 copies (16,384 record files in the preload library's format,
bench/synthetic_run.py, as bench/run_pages.py makes it), ingested by this echo and
by the echo of another commit (`--baseline`, the ingest before the bulk one),
alternating, beside the floor: the bare reading of every file the ingest reads.

    .venv/bin/python bench/run_ingest.py [--records N] [--store 4096x4] [--baseline REF]

Writes bench/results/ingest.md. Targets: over 500k records/s; the 4096 x 4 store at
25 M records/s (issue 34).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library
from echo.runformat.records import read_run
from echo.store.db import open_store
from echo.store.ingest import ingest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIMES = 3  # each ingest of the store, alternating: the median is reported (the machine is shared)
# one ingest in a fresh process, its seconds printed: `echo` is whichever the path gives first (cwd: the echo's folder)
INGEST = ("import sys, time; from echo.store.db import open_store; from echo.store.ingest import ingest; "
          "e = open_store(sys.argv[2]); t = time.perf_counter(); ingest(sys.argv[1], e); "
          "print(time.perf_counter() - t)")
PARTS = {"read_all": "reading the record files into the buffer and parsing their headers",
         "summarize": "summarizing the calls (numpy, per process and function)",
         "read_if_there": "reading the status and metrics files",
         "insert_tuples": "inserting the process and summary rows (SQLite)"}


def bare_read(run_dir: Path) -> float:
    """Seconds to read every per-process file the ingest reads (records, status, metrics, lost calls), from one
    listing of each folder into one reused buffer, and nothing else: the floor of any ingest."""
    paths = [e.path for folder in ("records", "procs", "metrics") if (run_dir / folder).is_dir()
             for e in os.scandir(run_dir / folder) if e.is_file()]
    buf = memoryview(np.empty(64 << 20, np.uint8))
    t = time.perf_counter()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.readv(fd, [buf])
        finally:
            os.close(fd)
    return time.perf_counter() - t


def ingest_once(echo_dir: Path, run_dir: Path, db: Path) -> float:
    db.unlink(missing_ok=True)
    p = subprocess.run([sys.executable, "-c", INGEST, str(run_dir), f"sqlite:///{db}"], cwd=echo_dir,
                       env=dict(os.environ, PYTHONPATH=str(echo_dir)), capture_output=True, text=True, check=True)
    return float(p.stdout.split()[-1])


def profile_parts(run_dir: Path, db: Path) -> tuple[float, dict[str, float]]:
    """This echo's ingest under cProfile: its seconds and the cumulative seconds of its parts (PARTS)."""
    import cProfile
    import pstats

    db.unlink(missing_ok=True)
    engine = open_store(f"sqlite:///{db}")
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.runcall(ingest, run_dir, engine)
    took = time.perf_counter() - t
    stats = pstats.Stats(prof).stats  # {(file, line, name): (calls, primitive, tottime, cumtime, callers)}
    return took, {name: sum(v[3] for k, v in stats.items() if k[2] == name) for name in PARTS}


def store_lines(store: str, baseline: str, work: Path) -> list[str]:
    """The 4096 x 4 store (or `store`) ingested by this echo and by `baseline`'s, beside the floor."""
    sys.path.insert(0, str(HERE))
    from run_pages import size_plan
    from synthetic_run import make_run

    nranks, copies = (int(x) for x in store.split("x"))
    run_dir = make_run(work / "store", size_plan(nranks, copies, 60))
    nrec = sum(len(f.records) for f in read_run(run_dir))
    before = work / "before"
    before.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline, "echo"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
    loads = [os.getloadavg()[0]]
    floor, old, new = [], [], []
    for _ in range(TIMES):
        floor.append(bare_read(run_dir))
        old.append(ingest_once(before, run_dir, work / "before.db"))
        new.append(ingest_once(ROOT, run_dir, work / "after.db"))
        loads.append(os.getloadavg()[0])
    profiled, parts = profile_parts(run_dir, work / "profiled.db")
    loads.append(os.getloadavg()[0])
    floor_s, old_s, new_s = (statistics.median(x) for x in (floor, old, new))
    rows = [("bare reading of every file the ingest reads (the floor)", floor_s),
            (f"ingest before (`{baseline}`)", old_s), ("ingest now (bulk)", new_s)]
    lines = [
        "",
        f"## The {nranks} x {copies} store",
        "",
        f"{nranks * copies:,} record files in the preload library's format (bench/synthetic_run.py, as "
        f"bench/run_pages.py makes them: {nrec:,} records of 48 bytes, a status file per process, a divergence, a "
        f"process killed), ingested into a new SQLite file by this echo and by the echo of `{baseline}`, each in a "
        f"fresh process, alternating; the median of {TIMES}. The machine was shared (load average "
        f"{min(loads):.1f} to {max(loads):.1f} on its {os.cpu_count()} cores, sampled between the steps): times are "
        "upper bounds.",
        "",
        "| step | seconds | records/s |",
        "|---|---|---|",
        *[f"| {what} | {s:.2f} | {nrec / s:,.0f} |" for what, s in rows],
        "",
        f"Target (issue 34): 25,000,000 records/s: {'met' if nrec / new_s >= 25e6 else 'NOT met'}; "
        f"{old_s / new_s:.1f}x faster than before; the bare reading of the files alone runs at "
        f"{nrec / floor_s / 1e6:.1f} M records/s, {'over' if nrec / floor_s >= 25e6 else 'under'} the target.",
        "",
        f"Where the ingest's time goes (one more run of it under cProfile, {profiled:.2f} s with the profiler's "
        "own cost):",
        "",
        "| part | seconds |",
        "|---|---|",
        *[f"| {PARTS[name]} | {parts[name]:.2f} |" for name in PARTS],
        f"| the rest: a row, an event and a metric per process in Python, the events' and the run's rows | "
        f"{profiled - sum(parts.values()):.2f} |",
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--store", default="4096x4", help="ranks x copies of the synthetic store ('': none)")
    ap.add_argument("--baseline", default="7bea1a4", help="the commit whose ingest is measured beside this one")
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    per_rank = a.records // 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "manycalls"
        subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(HERE / "manycalls.c")], check=True)
        run_dir = work / "run"
        t = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "echorun"), "--no-store", "--trace", "--run-dir",
                        str(run_dir), "-n", "2", str(exe), str(per_rank)], check=True, capture_output=True)
        t_run = time.perf_counter() - t
        size = sum(p.stat().st_size for p in (run_dir / "records").glob("*.rec"))
        t = time.perf_counter()
        nrec = sum(len(f.records) for f in read_run(run_dir))
        t_read = time.perf_counter() - t
        engine = open_store(f"sqlite:///{work / 'echo.db'}")
        t = time.perf_counter()
        ingest(run_dir, engine)
        t_ingest = time.perf_counter() - t
        store = store_lines(a.store, a.baseline, work) if a.store else []
    lines = [
        "# Ingest of a large run",
        "",
        measured_by("bench/run_ingest.py") + f": a real echorun job (2 ranks, interception only, `--trace`: a "
        f"record a call) making "
        f"{nrec:,} call records ({size / 2**20:.0f} MiB of record files), ingested into a new SQLite file.",
        "",
        "| step | seconds | records/s |",
        "|---|---|---|",
        f"| the job itself (writing the records) | {t_run:.2f} | {nrec / t_run:,.0f} |",
        f"| reading all record files (numpy, bulk) | {t_read:.2f} | {nrec / t_read:,.0f} |",
        f"| ingest: read, summarize per (rank, copy, function), store | {t_ingest:.2f} | {nrec / t_ingest:,.0f} |",
        "",
        f"Target: ingest over 500,000 records/s: {'met' if nrec / t_ingest > 500_000 else 'NOT met'}.",
        *store,
        "",
    ]
    write("ingest", lines)


if __name__ == "__main__":
    main()
