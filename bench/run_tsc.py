"""The cost of copies reading their representative's time-stamp counter (preload/core/echo_tsc.c): a trapped
rdtsc, clock_gettime, MPI_Wtime, a cheap MPI call and a small MPI_Allreduce, natively, under `--clones 2 --tsc own`
(each copy its own counter), under `--clones 2 --tsc share` as a baseline commit built it (by default the last
one whose wrappers lifted the trap around every MPI call: two system calls a call) and as this checkout builds it
(the trap stays set; a call pays only if something in it reads the counter), best of five runs each (the four
in turn), and the ratio of the two shared schemes. Compare the columns of one invocation: a loaded machine slows
them all.

    .venv/bin/python bench/run_tsc.py [--baseline REF]

Writes bench/results/tsc_trap.md.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
KEYS = ("rdtsc", "clock_gettime", "MPI_Wtime", "mpicall", "allreduce")
REPEAT = 5
# the last commit whose wrappers lifted the trap around every MPI call
OLD_SCHEME = "c514625"


def values(stdout: str) -> dict[str, float]:
    return {k: float(v) for k, v in (line.split() for line in stdout.splitlines() if line.split()[0] in KEYS)}


def best(runs: dict[str, tuple[Callable[[int], list[str]], dict[str, str] | None]]) -> dict[str, dict[str, float]]:
    """Each named command (its argv for the i-th run, its environment) run REPEAT times, the commands in turn so
    that each saw the same load, and the best value of each operation per command."""
    out: dict[str, dict[str, float]] = {name: {} for name in runs}
    for i in range(REPEAT):
        for name, (argv, env) in runs.items():
            p = subprocess.run(argv(i), capture_output=True, text=True, timeout=900, env=env)
            if p.returncode != 0:
                raise RuntimeError(p.stderr[-2000:])
            for k, v in values(p.stdout).items():
                out[name][k] = min(out[name].get(k, float("inf")), v)
    return out


def checkout(ref: str, into: Path) -> Path:
    """The echo package and preload sources of commit `ref`, unpacked into `into`."""
    p = subprocess.run(["git", "-C", str(HERE.parent), "archive", ref, "echo", "preload", "collectors"],
                       capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=OLD_SCHEME, help=f"the commit of the old scheme (default {OLD_SCHEME})")
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "tsc_cost")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "tsc_cost.c")], check=True)
        old_tree = checkout(a.baseline, work / "baseline")

        def echorun(tsc: str, old: bool = False) -> Callable[[int], list[str]]:
            entry = [sys.executable, "-c", "import sys; from echo.cli import echorun_entry; sys.exit(echorun_entry())"]
            return lambda i: [*(entry if old else [str(BIN / "echorun")]), "--no-store", "--run-dir",
                              str(work / f"{tsc}-{old}-{i}"), "-n", "2", "--clones", "2", "--tsc", tsc, exe]

        mpirun = [mpi.mpirun, "-n", "2", *mpi.family.launcher_options(os.geteuid() == 0, oversubscribe=True), exe]
        got = best({
            "native": (lambda _i: mpirun, None),
            "own": (echorun("own"), None),
            "old": (echorun("share", old=True), {**os.environ, "PYTHONPATH": str(old_tree)}),
            "new": (echorun("share"), None)})
        native, own, old, new = got["native"], got["own"], got["old"], got["new"]
    rows = [f"| {k} | {native[k]:.1f} | {own[k]:.1f} | {old[k]:.1f} | {new[k]:.1f} | {new[k] / old[k]:.2f} |"
            for k in KEYS]
    write("tsc_trap", [
        "# A copy's time-stamp counter: the cost of the trap", "",
        measured_by("bench/run_tsc.py") + f", {mpi.name}, load average {load:.1f} at the start.", "",
        "Nanoseconds per operation on the representative of rank 0, 2 ranks (`bench/tsc_cost.c`, best of "
        f"{REPEAT}). With `--tsc share` the application's `rdtsc` faults and is emulated (a signal, two system "
        "calls, and the reading forwarded to the copies); the vDSO's clocks would fault too, so the program's "
        "`clock_gettime` goes to the kernel by a system call (and is forwarded, as without the trap). "
        f"*Old* (commit {a.baseline}): the trap lifted and set again around every MPI call (two system calls a "
        "call). *New* (this checkout): the trap stays set; a call in which the MPI or echo reads the counter "
        "faults once and reads it freely for the rest of the call, and echo times calls with the kernel's monotonic "
        "clock by a system call (two a call). `MPI_Wtime` reads the MPI's clock, which goes through echo's "
        "`clock_gettime` (the kernel's, while "
        "the counter traps) under both. With `--tsc own` each copy reads its own counter and the vDSO's clocks.", "",
        "| operation | native | --clones 2 --tsc own | --tsc share, old | --tsc share, new | new / old |",
        "|---|---|---|---|---|---|", *rows, ""])


if __name__ == "__main__":
    main()
