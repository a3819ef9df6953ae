"""SDR with a slow replica: the job's wall time with and without excluding it.

The proxy application (bench/proxy.c) natively, then under `echorun --mode sdr
--replicas 2` unslowed and with replica 1 of rank 0 made F times slower for the
whole run (`--inject slow:rank=0,copy=1,factor=F`), with exclusion off
(`--exclude-slow 0`: its replica world, and the job's end, wait for it) and on
(`--exclude-slow 2`: excluded after two slow rounds, stopped at the end). The
time is echorun's whole job, start to end, best of the repetitions; ratios are
against the native run of the same invocation.

    .venv/bin/python bench/run_sdr_slow.py [--quick]

Writes bench/results/sdr_slow.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from results_file import measured_by, timed, write  # bench/ itself is on the path of a script run from it
from run_sdr import BIN, BIND, HERE, native_argv

from echo.build import detect_mpi, ensure_library

FACTOR = 4


def sdr_argv(exe: str, steps: str, work: Path, name: str, extra: list[str]) -> list[str]:
    return [str(BIN / "echorun"), "--no-store", "--run-dir", str(work / name), "-n", "2", "--mode", "sdr",
            "--replicas", "2", "--mpirun-args", " ".join(BIND), *extra, exe, steps]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, a short proxy")
    a = ap.parse_args()
    repeat = 1 if a.quick else 3
    steps = "300" if a.quick else "10000"
    mpi = detect_mpi()
    ensure_library(mpi)
    slow = ["--inject", f"slow:rank=0,copy=1,factor={FACTOR}"]
    cases = {
        "native": None,
        "SDR": ["--exclude-slow", "2"],
        "SDR, exclusion off": ["--exclude-slow", "0"],
        f"SDR, a replica {FACTOR}x slower, exclusion off": ["--exclude-slow", "0", *slow],
        f"SDR, a replica {FACTOR}x slower, excluded": ["--exclude-slow", "2", *slow],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "proxy")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "proxy.c")], check=True)
        for i in range(repeat):
            for j, (name, extra) in enumerate(cases.items()):
                argv = (native_argv(mpi, exe, [steps]) if extra is None
                        else sdr_argv(exe, steps, work, f"r{i}-{j}", extra))
                times[name].append(timed(argv))
    best = {name: min(t) for name, t in times.items()}
    base = best["native"]
    lines = [
        "# SDR: a slow replica, excluded or waited for",
        "",
        measured_by("bench/run_sdr_slow.py") + f", best of {repeat}.",
        "",
        f"bench/proxy.c ({steps} steps), 2 ranks; SDR runs 2 replicas of each (4 processes, on this machine's "
        f"cores as they are). The slow replica is replica 1 of rank 0, {FACTOR}x slower in every compute phase "
        "for the whole run (the injector sleeps, as a core lost to another tenant). Whole job, echorun's start "
        "to end (MPI start-up included).",
        "",
        "| run | wall time | / native |",
        "|---|---:|---:|",
    ]
    lines += [f"| {name} | {t:.2f} s | {t / base:.2f} |" for name, t in best.items()]
    slowed = best[f"SDR, a replica {FACTOR}x slower, exclusion off"]
    excluded = best[f"SDR, a replica {FACTOR}x slower, excluded"]
    lines += [
        "",
        f"Excluding the slow replica: {excluded:.2f} s against {best['SDR']:.2f} s unslowed "
        f"({excluded / best['SDR']:.2f}x) and {slowed:.2f} s waiting for it ({slowed / excluded:.2f}x longer). "
        "Without exclusion its replica world runs at its pace and the job's end waits for that world; with "
        "it, the world takes rank 0's messages from replica 0 after two slow rounds (32 calls), and the slow "
        "replica is stopped when its siblings finish. *exclusion off* unslowed shows what judging costs "
        "(rounds' reports, and acks to the sender itself that exclusion needs).",
    ]
    write("sdr_slow", lines)


if __name__ == "__main__":
    sys.exit(main())
