"""PAPI benchmark: one run with K copies, each counting one set, against K
separate runs (one set each, no copies), same program, same invocation: wall
time ratio and the per-event difference.

    .venv/bin/python bench/run_papi.py

Writes bench/results/papi.md. On a machine without a hardware PMU the sets are
perf:: software events.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.build import detect_mpi, ensure_library
from echo.collectors.papi import probe
from echo.store.db import open_store
from echo.store.models import Metric

HERE = Path(__file__).resolve().parent
SETS = [["perf::TASK-CLOCK", "perf::PAGE-FAULTS"], ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"]]


def run(work: Path, exe: str, copies: int, sets: list[list[str]]) -> tuple[float, dict[str, float]]:
    db = f"sqlite:///{work / f'db{time.monotonic_ns()}.sqlite'}"
    spec = ";".join(",".join(s) for s in sets)
    run_dir = str(work / f"r{time.monotonic_ns()}")
    argv = [str(Path(sys.executable).parent / "echorun"), "--db", db, "--run-dir", run_dir, "-n", "2",
            "--clones", str(copies), "--papi-sets", spec, exe, "400"]
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    with Session(open_store(db)) as s:  # rank 0's totals, from the copy that counted each event
        totals = {}
        for m in s.scalars(select(Metric).where(Metric.app_rank == 0, Metric.name.startswith("papi "))):
            words = m.name.split(" ")
            if len(words) == 2 and m.name != "papi read":
                totals.setdefault(words[1], m.value)
    return wall, totals


def main() -> None:
    mpi = detect_mpi()
    ensure_library(mpi)
    probe.check_copies(probe.plan(";".join(",".join(s) for s in SETS)), [len(SETS)])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "proxy"
        subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(HERE / "proxy.c")], check=True)
        one_wall, one = run(work, str(exe), len(SETS), SETS)
        separate = [run(work, str(exe), 1, [s]) for s in SETS]
    sep_wall = sum(w for w, _ in separate)
    merged_sep: dict[str, float] = {}
    for _, totals in separate:
        for k, v in totals.items():
            merged_sep.setdefault(k, v)
    lines = [
        "# PAPI: all sets in one run vs one run per set",
        "",
        measured_by("bench/run_papi.py") + " (no hardware PMU: perf:: software events): the proxy stencil, 2 ranks, "
        f"{len(SETS)} counter sets.",
        "",
        f"| | wall time (s) |\n|---|---|\n| one run, {len(SETS)} copies (a set each) | {one_wall:.2f} |",
        f"| {len(SETS)} separate runs (one set each) | {sep_wall:.2f} |",
        f"| ratio (one run / separate runs) | {one_wall / sep_wall:.2f} |",
        "",
        "Rank 0's totals per event (each from the copy, or run, that counted it):",
        "",
        "| event | one run | separate runs | difference |",
        "|---|---|---|---|",
    ]
    for ev in sorted(one):
        a, b = one[ev], merged_sep.get(ev, float("nan"))
        diff = f"{100 * (a - b) / b:+.1f}%" if b else "-"
        lines.append(f"| {ev} | {a:.0f} | {b:.0f} | {diff} |")
    lines += ["", "On 2 cores the one-run case has 4 processes sharing them, so its wall time is not the gain a "
              "machine with a core per copy would show; the counts compare the same work.", ""]
    write("papi", lines)


if __name__ == "__main__":
    main()
