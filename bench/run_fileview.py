"""The copies' file view (docs/fileview.md): what it costs a program's file I/O under `--clones 2`, against
`--clones 2 --file-view off` (copies do the program's I/O in its own files, as before the view), in one invocation,
runs interleaved; and what comparing the copies' files under --sdc costs after the job, against the bytes written.
Two workloads on one rank (bench/fileview.c, timed by the program): many small files, each written to a temporary
name, renamed over its final name and read back; and one stream of 1 GiB (--stream-mib to change it).

    .venv/bin/python bench/run_fileview.py [--repeat 3] [--files 200] [--rounds 10] [--stream-mib 1024]

Writes bench/results/fileview.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
# (echorun's options, how the program names its files): without the view a copy must name its files apart (by
# process id) or it would collide with its representative (a rename fails: the bug the view fixes); the view is
# timed with the same names, so both do the same I/O; the comparison is timed on names by rank (as programs name
# them), where each copy's files are its representative's
CONFIGS = {"view off": (["--file-view", "off"], "pid"), "view on": ([], "pid"),
           "view on, --sdc detect": (["--sdc", "detect"], "rank")}
COMPARED = re.compile(r"compared the files the copies wrote with their representatives' in ([0-9.]+) s")


Config = tuple[list[str], str]


def one_run(exe: str, workload: list[str], config: Config, scratch: Path) -> tuple[float, float, float | None]:
    """(the program's time, echorun's wall time, the comparison's seconds or None) of one run in a fresh folder."""
    work, run_dir = scratch / "work", scratch / "run"
    for d in (work, run_dir):
        shutil.rmtree(d, ignore_errors=True)
    work.mkdir()
    flags, names = config
    argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(run_dir), "-n", "1", "--clones", "2", *flags,
            exe, workload[0], str(work), names, *workload[1:]]
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"{argv}: {p.stderr[-2000:]}")
    took = next(float(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("fileview "))
    m = COMPARED.search(p.stderr)
    for d in (work, run_dir):
        shutil.rmtree(d, ignore_errors=True)
    return took, wall, float(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--stream-mib", type=int, default=1024)
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    workloads = {
        f"small files: {a.files} files x {a.rounds} rounds (4 KiB each: write, rename, read back)":
            (["small", str(a.files), str(a.rounds)], a.files * 4096),
        f"stream: {a.stream_mib} MiB in 4 MiB writes": (["stream", str(a.stream_mib)], a.stream_mib << 20),
    }
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("ECHO_BENCH_DIR")) as tmp:
        scratch = Path(tmp)
        exe = str(scratch / "fileview")
        subprocess.run([mpi.mpicc, "-O2", "-o", exe, str(HERE / "fileview.c")], check=True)
        for name, (workload, written) in workloads.items():
            runs: dict[str, list[tuple[float, float, float | None]]] = {c: [] for c in CONFIGS}
            for _ in range(a.repeat):  # interleaved: the machine's load falls on every configuration alike
                for config, flags in CONFIGS.items():
                    runs[config].append(one_run(exe, workload, flags, scratch))
                    print(name, config, runs[config][-1], flush=True)
            best = {c: (min(r[0] for r in rs), min(r[1] for r in rs)) for c, rs in runs.items()}
            compare = min(r[2] for r in runs["view on, --sdc detect"] if r[2] is not None)
            rows.append((name, best, compare, written))
    lines = [
        "# The copies' file view: its cost",
        "",
        measured_by("bench/run_fileview.py") + f", best of {a.repeat} (runs interleaved); one rank, `--clones 2` "
        f"(2 processes on this machine's {os.cpu_count()} cores); load average when written: "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}. The program's time is its own (bench/fileview.c, the "
        "representative's clock); echorun's wall time includes starting and ending the job. Each copy writes what "
        "its representative writes, so every run writes twice the bytes of a native one, with or without the view. "
        "Without the view a copy collides with its representative on every name (the small-file workload's renames "
        "fail), so the program names its files by process id in the first two columns' runs, the same I/O either "
        "way; the comparison is measured on files named by rank, as programs name them.",
        "",
        "| workload | file view off: program s | on: program s | on / off | off: echorun s | on: echorun s | "
        "on, --sdc detect: echorun s | comparison after the job |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, best, compare, written in rows:
        off, on, sdc = best["view off"], best["view on"], best["view on, --sdc detect"]
        rate = f"{compare:.2f} s ({written / max(compare, 1e-6) / 2**20:.0f} MiB/s of a copy's bytes)"
        lines.append(f"| {name} | {off[0]:.3f} | {on[0]:.3f} | {on[0] / off[0]:.3f} | {off[1]:.2f} | {on[1]:.2f} | "
                     f"{sdc[1]:.2f} | {rate} |")
    busy = os.getloadavg()[0] > (os.cpu_count() or 1)
    lines += (["", f"The machine was busy (load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores): differences of a "
               "few tens of percent between configurations are the scheduler's, in either direction; the view does "
               "not make I/O faster."] if busy else [])
    lines += ["", "Goal: the view at most 5% over `--clones 2 --file-view off` (on / off <= 1.05), and the comparison "
              "bounded by the bytes written (it reads each file a copy or its representative wrote once on each "
              "side, nothing else).", ""]
    write("fileview", lines)


if __name__ == "__main__":
    main()
