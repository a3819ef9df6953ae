"""SDR benchmark: ping-pong latency by message size (bench/pingpong.c) and a
proxy application (bench/proxy.c: a halo-exchange stencil with an Allreduce
every 10 steps), natively and under `echorun --mode sdr --replicas 2`, in the
same invocation.

Two baselines: the native run alone, and two native runs at the same time.
SDR runs two processes per rank; on a machine with fewer cores than that, the
replicas share cores, and the second baseline has the same sharing without
the protocol: SDR / (two natives) is the protocol's own cost (acks, copies of
small messages, progress), SDR / native what a user of this machine sees.
All runs use --bind-to none and yield when idle, so the sharing is the same in each.

    .venv/bin/python bench/run_sdr.py [--quick]

Writes bench/results/sdr.md and bench/results/sdr_overhead.json (the
planner's --overhead-from: the proxy's overhead per replication degree).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# bench/ itself is on the path of a script run from it
from results_file import RESULTS_DIR, measured_by, run_together, write

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
# the same in every run: no binding, and idle processes yield (as Open MPI does when oversubscribed)
BIND = ["--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]


def native_argv(mpi, exe: str, args: list[str]) -> list[str]:
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return [mpi.mpirun, "-n", "2", "--oversubscribe", *root, *BIND, exe, *args]


def sdr_argv(exe: str, args: list[str], work: Path, i: int) -> list[str]:
    return [str(BIN / "echorun"), "--no-store", "--run-dir", str(work / f"sdr{i}"), "-n", "2", "--mode", "sdr",
            "--replicas", "2", "--mpirun-args", " ".join(BIND), exe, *args]


def pingpong(out: str) -> dict[int, float]:
    return {int(w[1]): float(w[2]) for line in out.splitlines() if (w := line.split()) and w[0] == "pingpong"}


def proxy_seconds(out: str) -> float:
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("proxy ")))


def best(runs: list[dict[int, float]]) -> dict[int, float]:
    return {size: min(r[size] for r in runs) for size in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, a short proxy")
    a = ap.parse_args()
    repeat = 1 if a.quick else 3
    steps = "300" if a.quick else "3000"
    mpi = detect_mpi()
    ensure_library(mpi)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exes = {}
        for name in ("pingpong", "proxy"):
            exes[name] = str(work / name)
            subprocess.run([mpi.mpicc, "-O2", "-o", exes[name], str(HERE / f"{name}.c")], check=True)
        pp: dict[str, list[dict[int, float]]] = {"native": [], "pair": [], "sdr": []}
        px: dict[str, list[float]] = {"native": [], "pair": [], "sdr": []}
        for i in range(repeat):
            pp["native"].append(pingpong(run_together([native_argv(mpi, exes["pingpong"], [])])[0]))
            pair = [pingpong(o) for o in run_together([native_argv(mpi, exes["pingpong"], [])] * 2)]
            pp["pair"].append({size: max(r[size] for r in pair) for size in pair[0]})  # the slower of the two
            pp["sdr"].append(pingpong(run_together([sdr_argv(exes["pingpong"], [], work, i)])[0]))
            px["native"].append(proxy_seconds(run_together([native_argv(mpi, exes["proxy"], [steps])])[0]))
            px["pair"].append(max(proxy_seconds(o) for o in
                                  run_together([native_argv(mpi, exes["proxy"], [steps])] * 2)))
            px["sdr"].append(proxy_seconds(run_together([sdr_argv(exes["proxy"], [steps], work, 100 + i)])[0]))
    lat = {k: best(v) for k, v in pp.items()}
    version = subprocess.run([mpi.mpirun, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    prox = {k: min(v) for k, v in px.items()}
    lines = [
        "# SDR: replication's cost",
        "",
        measured_by("bench/run_sdr.py") + f", best of {repeat}; {version}.",
        "",
        "2 application ranks; SDR runs 2 replicas of each (4 processes). *two natives*: two native runs at the same "
        "time (the same number of processes on the same cores, without the protocol).",
        "",
        "## Ping-pong, one-way latency (µs)",
        "",
        "| bytes | native | two natives | SDR | SDR / native | SDR / two natives |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for size in sorted(lat["native"]):
        n, p, s = lat["native"][size], lat["pair"][size], lat["sdr"][size]
        lines.append(f"| {size} | {n:.2f} | {p:.2f} | {s:.2f} | {s / n:.2f} | {s / p:.2f} |")
    n, p, s = prox["native"], prox["pair"], prox["sdr"]
    lines += [
        "",
        f"## Proxy application (bench/proxy.c, {steps} steps)",
        "",
        "| native | two natives | SDR | SDR / native | SDR / two natives |",
        "|---:|---:|---:|---:|---:|",
        f"| {n:.3f} s | {p:.3f} s | {s:.3f} s | {s / n:.2f} | {s / p:.2f} |",
        "",
        "SDR-MPI reports 1-byte latency 1.67 µs native vs 2.37 µs with 2 replicas (1.42x) and under 5% on "
        "applications, with every replica on its own core of its own node. Here the gap comes from: the ack each "
        "message costs (a second small message, to the sender's other replica, and its processing in the "
        "progress loop), the copy of each small message kept until its ack arrives, the SDR layer's own "
        "matching and bookkeeping in front of Open MPI, and, on this machine, replicas sharing cores "
        "(the *SDR / native* column; the *two natives* column carries that sharing without the protocol).",
    ]
    write("sdr", lines)
    overhead = {"2": round(max(0.0, s / p - 1.0), 4)}
    (RESULTS_DIR / "sdr_overhead.json").write_text(json.dumps(overhead) + "\n")
    print(f"planner overhead (mpiecho plan --reliability --overhead-from): {overhead}")


if __name__ == "__main__":
    main()
