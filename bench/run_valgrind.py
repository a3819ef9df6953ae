"""Valgrind benchmark, in one invocation on the proxy stencil (2 ranks):
- memcheck on one copy of each rank (echorun --clones 2 --valgrind memcheck) vs memcheck on the whole job
  natively (mpirun ... valgrind --tool=memcheck ./app), against the native run;
- callgrind sliced over K copies vs one unsliced callgrind copy.

    .venv/bin/python bench/run_valgrind.py

Writes bench/results/valgrind.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, timed, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
STEPS = "60"


def main() -> None:
    mpi = detect_mpi()
    ensure_library(mpi)
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "proxy")
        subprocess.run([mpi.mpicc, "-O2", "-g", "-o", exe, str(HERE / "proxy.c")], check=True)

        def echo(*opts: str) -> float:
            return timed([str(BIN / "echorun"), "--no-store", "--run-dir", str(work / f"r{time.monotonic_ns()}"),
                          "-n", "2", *opts, exe, STEPS])

        native = timed([mpi.mpirun, "-n", "2", *root, exe, STEPS])
        whole = timed([mpi.mpirun, "-n", "2", *root, shutil.which("valgrind"), "--tool=memcheck", "-q",
                       f"--log-file={work}/vg.%p", exe, STEPS])
        one_copy = echo("--clones", "2", "--valgrind", "memcheck")
        unsliced = echo("--clones", "2", "--valgrind-slice", "callgrind:1", "--slice-calls", "10")
        sliced = echo("--clones", "3", "--valgrind-slice", "callgrind:2", "--slice-calls", "10")
    rows = [("native (mpirun)", native), ("memcheck on the whole job (mpirun valgrind)", whole),
            ("memcheck on copy 1 of each rank (echorun --clones 2)", one_copy),
            ("callgrind, one copy instruments the whole run", unsliced),
            ("callgrind sliced over 2 copies", sliced)]
    lines = [
        "# Valgrind on copies",
        "",
        measured_by("bench/run_valgrind.py") + f": the proxy stencil, 2 ranks, {STEPS} steps. "
        "Wall time of the whole job.",
        "",
        "| configuration | seconds | / native |",
        "|---|---|---|",
        *[f"| {name} | {t:.2f} | {t / native:.1f} |" for name, t in rows],
        "",
        "With echo the representatives run at native speed; the job still ends when the slowest copy does, so",
        "its wall time is that of the tool. On this 2-core machine the copies also share the cores with the",
        "representatives. Slices pay off when each slice is much shorter than the whole and there is a core",
        "per copy: each sliced copy runs uninstrumented (about 4x faster under callgrind) outside its epochs.",
        "",
    ]
    write("valgrind", lines)


if __name__ == "__main__":
    main()
