"""What echo's records cost per call, by default (per-function totals, call 0 and a ring of the last calls) and with
the whole trace (echorun --trace), in one invocation: bench/callcost.c's MPI_Iprobe loop natively, under echorun with
1 copy both ways, and with the trace's file on tmpfs (nothing written back to a disk); and the bytes of records each
way per call the program made.

    .venv/bin/python bench/run_records.py [--repeat N]

Writes bench/results/records.md. Each configuration runs `--repeat` times, in turn (native, default, trace, ...),
and the best (lowest) of each is kept: on a shared machine the minimum is the least disturbed measurement.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CONFIGS = {"native": None, "default": [], "trace": ["--trace"], "trace on tmpfs": ["--trace"]}


def run(config: str, exe: str, mpirun: str, work: Path) -> tuple[float, float, int]:
    """ns per call of the loop, one rdtsc read's ns, and the bytes the run's records took per call it made."""
    run_dir = work / f"run-{time.monotonic_ns()}"
    flags = CONFIGS[config]
    if flags is None:
        argv = [mpirun, "-n", "1"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    else:
        argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(run_dir), "-n", "1", *flags]
    p = subprocess.run(argv + [exe], capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{config} failed:\n{p.stderr[-2000:]}")
    out = dict(line.split()[:2] for line in p.stdout.splitlines() if len(line.split()) >= 2)
    records = run_dir / "records"
    size = sum(f.stat().st_size for f in records.iterdir()) if records.is_dir() else 0
    if records.is_dir():
        import shutil

        shutil.rmtree(run_dir)  # a trace of millions of calls: not kept on the disk between runs
    return float(out["callcost"]), float(out.get("ticks", 0.0)), size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    samples: dict[str, list[tuple[float, float, int]]] = {c: [] for c in CONFIGS}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        exe = str(Path(tmp) / "callcost")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "callcost.c")], check=True)
        for _ in range(a.repeat):  # in turn: a drift in the machine's load touches every configuration alike
            for config in CONFIGS:
                samples[config].append(run(config, exe, mpi.mpirun, Path(shm if "tmpfs" in config else tmp)))
            load.append(os.getloadavg()[0])
    best = {c: min(s[0] for s in v) for c, v in samples.items()}
    ticks = min(s[1] for s in samples["native"])
    # the loop's calls: 3 timed passes of 2,000,000 and the few around them (bench/callcost.c)
    calls = 3 * 2_000_000
    native = best["native"]
    lines = [
        "# Records: their cost per call, by default and with the whole trace",
        "",
        measured_by("bench/run_records.py") + f", best of {a.repeat} runs of each, taken in turn.",
        f"Load average (1 min) from {min(load):.1f} to {max(load):.1f} during the runs (2 cores shared with other "
        "work: every column is slowed, the differences less).",
        "bench/callcost.c: a loop of MPI_Iprobe on MPI_COMM_SELF (a real, cheap call), 1 process, Open MPI; "
        "`default`: echorun with 1 copy (per-function totals, call 0 and a ring of the last 65,536 calls); "
        "`trace`: echorun --trace (every call in a mapped file, as every run was before); `trace on tmpfs`: the "
        "same with the run directory in memory (no write-back to a disk).",
        "",
        "| configuration | ns per call | over native (ns) | records written (bytes) | bytes per call |",
        "|---|---|---|---|---|",
    ]
    for c in CONFIGS:
        size = max(s[2] for s in samples[c])
        lines.append(f"| {c} | {best[c]:.2f} | {best[c] - native:.1f} | {size:,} | {size / calls:.2f} |")
    lines += [
        "",
        f"One rdtsc read costs {ticks:.2f} ns here; a call's record takes two (its start and its end), so the time "
        f"stamps alone are {2 * ticks:.1f} ns of each call's cost over native, whichever records are kept.",
        "",
    ]
    write("records", lines)


if __name__ == "__main__":
    main()
