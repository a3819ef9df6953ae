"""Replication-core benchmark: native vs echorun with 1 copy (interception only)
vs 2 copies, in one invocation, on ping-pong, a collectives loop, a proxy-like
stencil loop and the cost of one intercepted call.

    .venv/bin/python bench/run_replication.py [--quick]

Writes bench/results/replication.md (the README links it). Each configuration
runs `--repeat` times and the best (lowest) time is kept: on a shared 2-core
machine the minimum is the least disturbed measurement.
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


def compile_all(mpicc: str, out: Path) -> dict[str, str]:
    exes = {}
    for name in ("pingpong", "collectives", "proxy", "callcost"):
        exe = out / name
        subprocess.run([mpicc, "-O2", "-o", str(exe), str(HERE / f"{name}.c")], check=True)
        exes[name] = str(exe)
    return exes


def run(mode: str, n: int, cmd: list[str], mpirun: str, work: Path) -> dict[str, list[float]]:
    if mode == "native":
        # the options echorun itself would add: --oversubscribe only beyond one process per core (mpirun binds
        # processes to cores otherwise, which changes the numbers by itself)
        argv = [mpirun, "-n", str(n)] + (["--oversubscribe"] if n > (os.cpu_count() or 1) else []) \
            + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    else:  # echo-K: K copies per rank; -trace: every call recorded; -norecords: the trace stops after its first MiB
        copies, _, records = mode.removeprefix("echo-").partition("-")
        argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(work / f"run-{time.monotonic_ns()}"),
                "-n", str(n), "--clones", copies] + {"": [], "trace": ["--trace"],
                                                     "norecords": ["--trace", "--records-max-mb", "1"]}[records]
    p = subprocess.run(argv + cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"{mode} {cmd} failed:\n{p.stderr[-2000:]}")
    out: dict[str, list[float]] = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            try:
                out.setdefault(parts[0], []).append(float(parts[-1]))
                if parts[0] == "pingpong":
                    out.setdefault(f"pingpong {int(parts[1])}", []).append(float(parts[2]))
            except ValueError:
                pass
    return out


def best(samples: list[dict[str, list[float]]], key: str) -> float:
    return min(s[key][0] for s in samples if key in s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one repetition, shorter proxy run")
    a = ap.parse_args()
    repeat = 1 if a.quick else a.repeat
    mpi = detect_mpi()
    ensure_library(mpi)
    modes = ["native", "echo-1", "echo-2"]
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exes = compile_all(mpi.mpicc, work)
        plan = [
            ("callcost", 1, [exes["callcost"]], ["callcost"]),
            ("collectives", 2, [exes["collectives"]], ["collectives"]),
            ("proxy", 2, [exes["proxy"], "100" if a.quick else "300"], ["proxy"]),
            ("pingpong", 2, [exes["pingpong"]], [f"pingpong {4 ** k}" for k in range(12)]),
        ]
        for _name, n, cmd, keys in plan:
            results = {m: [run(m, n, cmd, mpi.mpirun, work) for _ in range(repeat)] for m in modes}
            for key in keys:
                rows.append((key, {m: best(results[m], key) for m in modes}))
        # the interception's cost taken apart: without records, and what the records' time stamps cost
        bare = [run("echo-1-norecords", 1, [exes["callcost"]], mpi.mpirun, work) for _ in range(repeat)]
        parts = {"norecords": best(bare, "callcost"), "ticks": best(bare, "ticks") if "ticks" in bare[0] else 0.0}
        with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:  # records in memory: nothing written back to disk
            parts["tmpfs"] = best([run("echo-1-trace", 1, [exes["callcost"]], mpi.mpirun, Path(shm))
                                   for _ in range(repeat)], "callcost")
        parts["trace"] = best([run("echo-1-trace", 1, [exes["callcost"]], mpi.mpirun, work) for _ in range(repeat)],
                              "callcost")
    write_table(rows, repeat, parts)


def write_table(rows: list[tuple[str, dict[str, float]]], repeat: int, parts: dict[str, float]) -> None:
    unit = {"callcost": "ns/call", "collectives": "us/iter", "proxy": "s"}
    lines = [
        "# Replication core: echo vs native",
        "",
        measured_by("bench/run_replication.py") + f", best of {repeat}.",
        "`echo-1`: echorun with 1 copy per rank (interception only; records: per-function totals and the last "
        "calls, docs/records.md); `echo-2`: 2 copies per rank (every call recorded).",
        "Native runs get the mpirun options echorun would add (so the same binding of processes to cores).",
        "Ping-pong and collectives run 2 ranks, so `echo-2` has 4 processes on this machine's 2 cores",
        "(oversubscribed, so unbound). Copies sleep while they wait and read their representative's messages",
        "from a ring in shared memory (preload/core/echo_channel.c). Load average when written: "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg()) + " (other work on the machine slows every column).",
        "",
        "| benchmark | unit | native | echo-1 | echo-2 | echo-1 / native | echo-2 / native |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, v in rows:
        u = unit.get(key, "us one-way")
        label = key if not key.startswith("pingpong ") else f"ping-pong {int(key.split()[1])} B"
        lines.append(
            f"| {label} | {u} | {v['native']:.3f} | {v['echo-1']:.3f} | {v['echo-2']:.3f} | "
            f"{v['echo-1'] / v['native']:.3f} | {v['echo-2'] / v['native']:.3f} |"
        )
    cc = dict(rows)["callcost"]
    lines += [
        "",
        f"Interception cost per call (echo-1 minus native, MPI_Iprobe loop): {cc['echo-1'] - cc['native']:.1f} ns "
        f"(goal: at most 15 ns), with every call recorded (--trace) {parts['trace'] - cc['native']:.1f} ns (goal: at "
        f"most 30; bench/run_records.py measures both in turn, with their bytes per call: bench/results/records.md). "
        f"Taken apart: with the trace stopped after its first MiB the same loop costs "
        f"{parts['norecords'] - cc['native']:.1f} ns over native (the wrapper, its guard and its dispatch); the rest "
        f"is the record of each call, of which its two time stamps (start and end) take {2 * parts['ticks']:.1f} ns "
        f"(one rdtsc read: {parts['ticks']:.2f} ns on this machine), and the trace's pages written back to "
        f"disk by the kernel (the trace with the run directory on tmpfs: {parts['tmpfs'] - cc['native']:.1f} ns "
        "over native).",
        "",
    ]
    write("replication", lines)


if __name__ == "__main__":
    main()
