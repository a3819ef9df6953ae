"""The cost of copies reading their representative's time-stamp counter (preload/core/echo_tsc.c): a trapped
rdtsc, a clock_gettime and a cheap MPI call, natively, under `--clones 2` (each copy its own counter, the default)
and under `--clones 2 --tsc share` (the trap, asked for), best of three runs each. Compare the columns of one
invocation: a loaded machine slows them all.

    .venv/bin/python bench/run_tsc.py

Writes bench/results/tsc_trap.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library
from echo.plan import mpirun_options

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
KEYS = ("rdtsc", "clock_gettime", "mpicall")
REPEAT = 3


def values(stdout: str) -> dict[str, float]:
    return {k: float(v) for k, v in (line.split() for line in stdout.splitlines() if line.split()[0] in KEYS)}


def best(argvs: list[list[str]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for argv in argvs:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        for k, v in values(p.stdout).items():
            out[k] = min(out.get(k, float("inf")), v)
    return out


def main() -> None:
    mpi = detect_mpi()
    ensure_library(mpi)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "tsc_cost")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "tsc_cost.c")], check=True)
        native = best([[mpi.mpirun, "-n", "2", *mpirun_options(mpi.flavor, os.geteuid() == 0, oversubscribe=True), exe]
                       for _ in range(REPEAT)])
        cloned = {tsc: best([[str(BIN / "echorun"), "--no-store", "--run-dir", str(work / f"r{time.monotonic_ns()}"),
                              "-n", "2", "--clones", "2", "--tsc", tsc, exe] for _ in range(REPEAT)])
                  for tsc in ("own", "share")}
    rows = [f"| {k} | {native[k]:.1f} | {cloned['own'][k]:.1f} | {cloned['share'][k]:.1f} |" for k in KEYS]
    write("tsc_trap", [
        "# A copy's time-stamp counter: the cost of the trap", "",
        measured_by("bench/run_tsc.py") + f", {mpi.name}.", "",
        "Nanoseconds per operation on the representative of rank 0, 2 ranks (`bench/tsc_cost.c`, best of "
        f"{REPEAT}). Under copies the application's `rdtsc` faults and is emulated (a signal, two system calls, "
        "and the reading forwarded to the copies); the vDSO's clocks would fault too, so the program's "
        "`clock_gettime` goes to the kernel by a system call (and is forwarded, as without the trap); around each "
        "MPI call the trap is lifted and set again (two system calls). Without the trap (`--tsc own`, the default) "
        "each copy reads its own counter and the vDSO's clocks.", "",
        "| operation | native | --clones 2 --tsc own | --clones 2 --tsc share |", "|---|---|---|---|", *rows, ""])


if __name__ == "__main__":
    main()
