"""SDC on programs written like real codes: how often a clean run is flagged (false alarms, goal 0) and how often
an injected bit flip is caught (goal 100%).

The programs (tests/programs) time themselves with every kind of clock a code uses (MPI_Wtime, gettimeofday,
clock_gettime, time, clock, std::chrono, Python's time), reduce the timers with MAX and SUM and print them, and
run as many steps as fit in a time budget; one moves nothing at most steps, passing stray pointers with zero
counts. Each program runs `--clean` times under `--sdc detect` with no injection, then `--flips` times with one
bit flipped in a random copy of a random rank at a random call (seeded). A flip counts as caught when a
divergence is recorded for that rank at the call it hit.

    .venv/bin/python bench/run_sdc_realcodes.py [--clean 10 --flips 10] [--name sdc_realcodes]

Writes bench/results/<name>.md.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import detect_mpi, ensure_library

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent / "tests" / "programs"
BIN = Path(sys.executable).parent
# name, source, arguments, what it is
CODES = [
    ("timers", "timers.c", ["0.3"], "heat equation, C: MPI_Wtime, gettimeofday, clock_gettime, time, clock; "
     "time budget"),
    ("timers_cxx", "timers_cxx.cpp", ["0.3"], "particles, C++: std::chrono steady/high_resolution/system clocks; "
     "time budget"),
    ("py_timers", "py_timers.py", ["0.3"], "mpi4py solver: time.time, perf_counter, monotonic, MPI.Wtime; "
     "time budget"),
    ("sparse_exchange", "sparse_exchange.c", [], "sparse Alltoallv, zero counts with stray pointers"),
    ("sdc_loop", "sdc_loop.c", [], "stencil with a derived type (no timers)"),
]
RANKS, COPIES = 2, 2
HANG = -1  # run()'s status for a job that did not end in time


def build(mpi: object, work: Path) -> dict[str, list[str]]:
    cmds = {}
    for name, src, args, _ in CODES:
        path = PROGRAMS / src
        if path.suffix == ".py":
            cmds[name] = [sys.executable, str(path), *args]
            continue
        compiler = mpi.mpicc if path.suffix == ".c" else str(Path(mpi.mpicc).parent / "mpicxx")
        subprocess.run([compiler, "-O1", "-o", str(work / name), str(path)], check=True)
        cmds[name] = [str(work / name), *args]
    return cmds


def events(run_dir: Path) -> list[dict]:
    out = []
    for path in sorted((run_dir / "events").glob("*.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def run(cmd: list[str], run_dir: Path, inject: str | None, limit: float = 120) -> tuple[int, list[dict], float]:
    """echorun's status (HANG if the job outlived `limit`: echorun is then told to stop, as a user would), the
    events of the run and its wall time."""
    argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(run_dir), "--sdc", "detect", "-n", str(RANKS),
            "--clones", str(COPIES)] + (["--inject", inject] if inject else [])
    t = time.perf_counter()
    p = subprocess.Popen(argv + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        rc = p.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)  # echorun ends the whole job (echo/jobstop.py)
        p.wait(timeout=60)
        rc = HANG
    return rc, events(run_dir), time.perf_counter() - t


def calls_made(run_dir: Path) -> int:
    """MPI calls of rank 0's representative in a clean run (to draw injection calls from)."""
    from echo.runformat.records import read

    return len(read(run_dir / "records" / "0.rec").records)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clean", type=int, default=10, help="clean runs per program")
    ap.add_argument("--flips", type=int, default=10, help="runs with one injected flip per program")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="sdc_realcodes", help="results file name under bench/results")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    mpi = detect_mpi()
    ensure_library(mpi)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cmds = build(mpi, work)
        for name, _, _, what in CODES:
            alarms, seconds, calls = 0, 0.0, []
            for i in range(a.clean):
                rd = work / f"{name}-clean{i}"
                rc, ev, s = run(cmds[name], rd, None)
                seconds += s
                alarms += rc != 0 or any(e["kind"] in ("divergence", "clocks-apart") for e in ev)
                if rc == 0:
                    calls.append(calls_made(rd))
            # a time budget makes the number of calls vary from run to run: flips land in the first half of the
            # fewest calls a clean run made, so that each one fires
            last = max(6, min(calls or [50]) // 2)
            fired = caught = exit20 = 0
            endings: dict[int, int] = {}
            for i in range(a.flips):
                rank, copy = rng.randrange(RANKS), rng.randrange(COPIES)
                rd = work / f"{name}-flip{i}"
                rc, ev, _ = run(cmds[name], rd, f"bitflip:rank={rank},copy={copy},call={rng.randrange(5, last)}")
                inj = [e for e in ev if e["kind"] == "injection"]
                if not inj:
                    continue
                fired += 1
                hit = inj[0]["call"]
                # with 2 copies the copy that differs from copy 0 records it: a flip in copy 0 is recorded by copy 1
                caught += any(e["kind"] == "divergence" and (e["app_rank"], e["call"]) == (rank, hit) for e in ev)
                exit20 += rc == 20
                if rc != 20:
                    endings[rc] = endings.get(rc, 0) + 1
            other = ", ".join(f"{n}x " + ("hang" if code == HANG else f"exit {code}")
                              for code, n in sorted(endings.items())) or "-"
            rows.append((name, what, a.clean, alarms, fired, caught, exit20, other, seconds / max(1, a.clean)))
            print(rows[-1], flush=True)
    lines = [
        "# SDC on programs written like real codes",
        "",
        measured_by("bench/run_sdc_realcodes.py") + f" ({RANKS} ranks, {COPIES} copies each, `--sdc detect`, "
        f"seed {a.seed}). A clean run is a false alarm if echorun exits non-zero or records a divergence; a flip "
        "is caught if a divergence is recorded for the flipped rank at the call the flip hit (by the copy that differs "
        "from copy 0: a flip in copy 0 is recorded by copy 1); after it "
        "echorun exits 20 (diverged), or with the status of a job that the corrupted copy then broke.",
        "",
        "| program | what it does | clean runs | false alarms | flips that fired | caught at their call | "
        "exit 20 | other endings | mean clean run (s) |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, what, clean, alarms, fired, caught, exit20, other, secs in rows:
        lines.append(f"| {name} | {what} | {clean} | {alarms} | {fired} | {caught} | {exit20} | {other} | {secs:.1f} |")
    total_clean = sum(r[2] for r in rows)
    total_alarms = sum(r[3] for r in rows)
    total_fired = sum(r[4] for r in rows)
    total_caught = sum(r[5] for r in rows)
    lines += [
        "",
        f"False-alarm rate: {total_alarms} of {total_clean} clean runs "
        f"({100 * total_alarms / max(1, total_clean):.0f}%); detection rate: {total_caught} of {total_fired} "
        f"injected flips ({100 * total_caught / max(1, total_fired):.0f}%).",
        "",
        "Copies read their representative's clocks (docs/sdc.md, \"Clocks\"); without that, each copy's timers "
        "differ and every program above that reduces its timers is flagged.",
        "",
    ]
    write(a.name, lines)


if __name__ == "__main__":
    main()
