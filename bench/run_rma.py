"""RMA benchmark: the cost of a fence epoch with copies, by window size and by
the number of window pages an epoch changes (bench/rmasync.c: rank 0 puts one
int into each of k pages of rank 1's window), natively and under 2 copies,
with the bytes of window memory each forward moved (the target's metrics).

    .venv/bin/python bench/run_rma.py [--quick]

Writes bench/results/rma.md.
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
from echo.store.ingest import read_metrics

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
ITERATIONS = 200
CASES = [(64 << 10, 1), (1 << 20, 1), (1 << 20, 256), (16 << 20, 1), (16 << 20, 4096)]


def per_epoch_us(out: str) -> float:
    return float(out.split("per_epoch_us")[1].split()[0])


def native(mpi, exe: str, args: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        # the options echorun would add for 2 processes (the same binding)
        argv = [mpi.mpirun, "-n", "2"] + (["--oversubscribe"] if (os.cpu_count() or 1) < 2 else []) \
            + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        p = subprocess.run(argv + [exe, *args], capture_output=True, text=True, timeout=900, check=True)
        best = min(best, per_epoch_us(p.stdout))
    return best


def cloned(exe: str, args: list[str], work: Path, repeat: int) -> tuple[float, float, float]:
    """Best time per epoch, and the target's window bytes per forward: whole windows, and sent."""
    best = float("inf")
    for _ in range(repeat):
        run = work / f"r{time.monotonic_ns()}"
        p = subprocess.run([str(BIN / "echorun"), "--no-store", "--run-dir", str(run), "-n", "2", "--clones", "2",
                            exe, *args], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        best = min(best, per_epoch_us(p.stdout))
        metrics = {name: value for name, value, _ in read_metrics(run, 1)}  # real rank 1: rank 1's representative
    forwards = metrics["rma memory forwards"]
    return best, metrics["rma window bytes at forwards"] / forwards, metrics["rma window bytes sent"] / forwards


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    repeat = 1 if a.quick else 3
    mpi = detect_mpi()
    ensure_library(mpi)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "rmasync")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "rmasync.c")], check=True)
        for nbytes, pages in CASES:
            args = [str(nbytes), str(pages), str(ITERATIONS)]
            t_native = native(mpi, exe, args, repeat)
            t_cloned, whole, sent = cloned(exe, args, work, repeat)
            rows.append(f"| {nbytes >> 10} KiB | {pages} | {t_native:.1f} | {t_cloned:.1f} | {whole / 1024:.0f} KiB "
                        f"| {sent / 1024:.1f} KiB |")
    write("rma", [
        "# RMA: window memory forwarded at synchronization",
        "",
        measured_by("bench/run_rma.py"),
        "",
        f"A fence epoch, {ITERATIONS} times (after 10 warm-up epochs): rank 0 puts one int into each of the first k "
        "pages of rank 1's window (`bench/rmasync.c`), `-n 2`, natively and with `--clones 2`. Bytes are per forward "
        "of rank 1's window (its metrics, averaged over every forward of the run, the first one included): "
        "forwarding whole windows would move the first column, echo moves the changed pages (docs/rma.md). "
        "Where every page changes, less than the window travels per forward: the next epoch's puts may land while "
        "the target forwards after a fence, and those pages then travel with that forward. Times are the best of "
        "the runs on a machine shared with other jobs; the bytes do not depend on it.",
        "",
        "| window | pages changed per epoch | native µs/epoch | 2 copies µs/epoch | whole window | sent |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
    ])


if __name__ == "__main__":
    main()
