"""RMA benchmark: the cost of a fence epoch with copies, by window size and by
the number of window pages an epoch changes (bench/rmasync.c: rank 0 puts one
int into each of k pages of rank 1's window), natively and under 2 copies,
with the bytes of window memory each forward compared and moved (the target's
metrics).  --before CHECKOUT also runs the copies with another checkout of echo
(its .venv), in the same invocation: the code before a change, under the same load.

    .venv/bin/python bench/run_rma.py [--quick] [--before /path/to/echo]

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


def cloned(exe: str, args: list[str], work: Path, repeat: int, echo_bin: Path = BIN) -> dict[str, float]:
    """Best time per epoch, and the target's window bytes per forward: whole windows, compared and sent."""
    best = float("inf")
    for _ in range(repeat):
        run = work / f"r{time.monotonic_ns()}"
        p = subprocess.run([str(echo_bin / "echorun"), "--no-store", "--run-dir", str(run), "-n", "2", "--clones", "2",
                            exe, *args], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        best = min(best, per_epoch_us(p.stdout))
        metrics = {name: value for name, value, _ in read_metrics(run, 1)}  # real rank 1: rank 1's representative
    forwards = metrics["rma memory forwards"]
    per = {name: metrics.get(f"rma window bytes {name}", float("nan")) / forwards
           for name in ("at forwards", "compared", "sent")}  # "compared" is counted since write tracking
    return {"us": best, **per}


def commit(checkout: Path) -> str:
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", type=Path, help="a checkout of echo (with its .venv) to run the copies with too")
    a = ap.parse_args()
    before_bin = a.before / ".venv" / "bin" if a.before else None
    if before_bin and not (before_bin / "echorun").exists():
        ap.error(f"--before: no {before_bin / 'echorun'}; give a checkout set up with scripts/setup.sh")
    repeat = 1 if a.quick else 3
    load0 = os.getloadavg()[0]
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
            now = cloned(exe, args, work, repeat)
            cells = [f"{nbytes >> 10} KiB", str(pages), f"{t_native:.1f}"]
            if before_bin:
                then = cloned(exe, args, work, repeat, before_bin)
                cells.append(f"{then['us']:.1f} ({then['us'] / t_native:.0f}x)")
            cells += [f"{now['us']:.1f} ({now['us'] / t_native:.0f}x)", f"{now['at forwards'] / 1024:.0f} KiB",
                      f"{now['compared'] / 1024:.1f} KiB", f"{now['sent'] / 1024:.1f} KiB"]
            rows.append("| " + " | ".join(cells) + " |")
    write("rma", [
        "# RMA: window memory forwarded at synchronization",
        "",
        measured_by("bench/run_rma.py"),
        "",
        f"A fence epoch, {ITERATIONS} times (after 10 warm-up epochs): rank 0 puts one int into each of the first k "
        "pages of rank 1's window (`bench/rmasync.c`), `-n 2`, natively and with `--clones 2`. Bytes are per forward "
        "of rank 1's window (its metrics, averaged over every forward of the run, the first one included): "
        "forwarding whole windows would move the first column; echo compares the pages written since the last "
        "forward (the whole window on the first forward, after the program cleared it) and moves the changed "
        "ones (docs/rma.md). "
        "Where every page changes, less than the window travels per forward: the next epoch's puts may land while "
        "the target forwards after a fence, and those pages then travel with that forward. Times are the best of "
        "the runs on a machine shared with other jobs; the bytes do not depend on it.",
        "",
        "| window | pages changed per epoch | native µs/epoch | "
        + ("before: 2 copies µs/epoch | " if before_bin else "")
        + "2 copies µs/epoch | whole window | compared | sent |",
        "|---|---|---|---|---|---|---|" + ("---|" if before_bin else ""),
        *rows,
        "",
        *([f"Before: the copies run by the checkout at commit {commit(a.before)} (before write tracking), in the "
           "same invocation; the ratios are to native in the same row."] if before_bin else []),
        f"Load average at the start: {load0:.1f}, at the end: {os.getloadavg()[0]:.1f}, on {os.cpu_count()} cores.",
        "",
    ])


if __name__ == "__main__":
    main()
