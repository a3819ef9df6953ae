"""Ingest benchmark: a real run with 10 million call records (2 ranks x 5
million MPI_Iprobe calls), ingested into a fresh SQLite store.

    .venv/bin/python bench/run_ingest.py [--records N]

Writes bench/results/ingest.md. Target: over 500k records/s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library
from echo.runformat.records import read_run
from echo.store.db import open_store
from echo.store.ingest import ingest

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
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
        subprocess.run([str(Path(sys.executable).parent / "echorun"), "--no-store", "--run-dir", str(run_dir),
                        "-n", "2", str(exe), str(per_rank)], check=True, capture_output=True)
        t_run = time.perf_counter() - t
        size = sum(p.stat().st_size for p in (run_dir / "records").glob("*.rec"))
        t = time.perf_counter()
        nrec = sum(len(f.records) for f in read_run(run_dir))
        t_read = time.perf_counter() - t
        engine = open_store(f"sqlite:///{work / 'echo.db'}")
        t = time.perf_counter()
        ingest(run_dir, engine)
        t_ingest = time.perf_counter() - t
    lines = [
        "# Ingest of a large run",
        "",
        measured_by("bench/run_ingest.py") + f": a real echorun job (2 ranks, interception only) making "
        f"{nrec:,} call records ({size / 2**20:.0f} MiB of record files), ingested into a new SQLite file.",
        "",
        "| step | seconds | records/s |",
        "|---|---|---|",
        f"| the job itself (writing the records) | {t_run:.2f} | {nrec / t_run:,.0f} |",
        f"| reading all record files (numpy, bulk) | {t_read:.2f} | {nrec / t_read:,.0f} |",
        f"| ingest: read, summarize per (rank, copy, function), store | {t_ingest:.2f} | {nrec / t_ingest:,.0f} |",
        "",
        f"Target: ingest over 500,000 records/s: {'met' if nrec / t_ingest > 500_000 else 'NOT met'}.",
        "",
    ]
    write("ingest", lines)


if __name__ == "__main__":
    main()
