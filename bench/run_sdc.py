"""SDC benchmark: the cost of checking copies, per mode, against the same
number of copies without checking, on the collectives loop and the stencil-like
proxy, in one invocation; and the hash's throughput against memcpy.

    .venv/bin/python bench/run_sdc.py [--quick]

Writes bench/results/sdc.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import PRELOAD_DIR, detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CONFIGS = [("2 copies", 2, None), ("detect", 2, "detect"), ("stop", 2, "stop"),
           ("3 copies", 3, None), ("detect, 3", 3, "detect"), ("vote", 3, "vote")]


def measure(exe: list[str], key: str, copies: int, sdc: str | None, work: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(work / f"r{time.monotonic_ns()}"), "-n", "2",
                "--clones", str(copies)] + (["--sdc", sdc] if sdc else [])
        p = subprocess.run(argv + exe, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        value = next(float(line.split()[1]) for line in p.stdout.splitlines() if line.startswith(key + " "))
        best = min(best, value)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    repeat = 1 if a.quick else 3
    mpi = detect_mpi()
    ensure_library(mpi)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exes = {}
        for name in ("collectives", "proxy"):
            subprocess.run([mpi.mpicc, "-O2", "-o", str(work / name), str(HERE / f"{name}.c")], check=True)
            exes[name] = [str(work / name)] + (["150"] if name == "proxy" else [])
        subprocess.run(["cc", "-O2", f"-I{PRELOAD_DIR / 'clone'}", "-o", str(work / "hashspeed"),
                        str(HERE / "hashspeed.c")], check=True)
        speed = dict(line.split() for line in subprocess.run([str(work / "hashspeed")], capture_output=True,
                                                              text=True, check=True).stdout.splitlines())
        rows = {}
        for name, key in (("collectives", "collectives"), ("proxy", "proxy")):
            rows[name] = {label: measure(exes[name], key, c, sdc, work, repeat) for label, c, sdc in CONFIGS}
    lines = [
        "# SDC checking: cost per mode",
        "",
        measured_by("bench/run_sdc.py") + f", best of {repeat}. Every run has 2 ranks; the ratio compares each "
        "mode with the same "
        "number of copies without checking (so the oversubscription of this 2-core machine is in both).",
        "",
        "| program | unit | " + " | ".join(label for label, _, _ in CONFIGS) + " | detect / 2 copies | "
        "stop / 2 copies | vote / 3 copies |",
        "|---|---|" + "---|" * (len(CONFIGS) + 3),
    ]
    for name, unit in (("collectives", "us/iter"), ("proxy", "s")):
        v = rows[name]
        lines.append(f"| {name} | {unit} | " + " | ".join(f"{v[label]:.3f}" for label, _, _ in CONFIGS) +
                     f" | {v['detect'] / v['2 copies']:.2f} | {v['stop'] / v['2 copies']:.2f} | "
                     f"{v['vote'] / v['3 copies']:.2f} |")
    lines += ["", f"Hash throughput: {float(speed['hash']):.2f} GB/s; memcpy: {float(speed['memcpy']):.2f} GB/s "
              "(64 MiB buffer, one core).", ""]
    write("sdc", lines)


if __name__ == "__main__":
    main()
