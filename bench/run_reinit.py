"""Reinit benchmark: recovery time from the failure of one process (failure to
resumed computation), split into detection, MPI repair (shrink, merge),
respawn and checkpoint load, at 2, 4, 8 and 16 ranks; against checkpoint-
restart of the whole mpirun (the job dies, is relaunched and reloads its file
checkpoints) on the same program, in the same invocation.

    .venv/bin/python bench/run_reinit.py [--quick]

Writes bench/results/reinit.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import PRELOAD_DIR, detect_mpi

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
ITERATIONS, PAUSE_MS, KILL_ITER = "40", "30", "12"


def stamps(d: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in (d / "stamps").read_text().splitlines():
        name, value = line.split()
        out[name] = float(value)  # the last of a name wins (a relaunch writes "init" again)
    return out


def repair_event(run_dir: Path) -> dict[str, float]:
    for path in (run_dir / "events").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            if e.get("kind") == "reinit":
                words = e["detail"].split()
                return {words[i]: float(words[i + 1]) for i in range(0, len(words), 2)}
    raise RuntimeError(f"no repair event in {run_dir}")


def reinit_run(exe: str, n: int, work: Path) -> dict[str, float]:
    d = work / f"reinit-{n}"
    d.mkdir()
    argv = [str(BIN / "echorun"), "--no-store", "--run-dir", str(d / "run"), "-n", str(n), "--mode", "reinit",
            exe, "reinit", str(d), ITERATIONS, PAUSE_MS, str(n - 1), KILL_ITER]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-3000:])
    s, e = stamps(d), repair_event(d / "run")
    repair = (e["shrunk"] - e["seen"]) + (e["repaired"] - e["spawned"])
    return {"detection": e["seen"] - s["fail"], "MPI repair": repair,
            "respawn": e["spawned"] - e["shrunk"], "checkpoint load": s["resumed"] - e["repaired"],
            "total": s["resumed"] - s["fail"]}


def restart_run(mpirun: list[str], exe: str, n: int, work: Path) -> dict[str, float]:
    d = work / f"restart-{n}"
    d.mkdir()
    argv = mpirun + ["-n", str(n)] + (["--oversubscribe"] if n > (os.cpu_count() or 1) else []) + [
        exe, "restart", str(d), ITERATIONS, PAUSE_MS, str(n - 1), KILL_ITER]
    first = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    ended = time.time()
    if first.returncode == 0 or "fail" not in stamps(d):
        raise RuntimeError("the first launch should have lost a process: " + first.stderr[-2000:])
    second = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if second.returncode != 0:
        raise RuntimeError(second.stderr[-3000:])
    s = stamps(d)
    return {"detection": ended - s["fail"], "relaunch": s["init"] - ended, "checkpoint load": s["resumed"] - s["init"],
            "total": s["resumed"] - s["fail"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 and 4 ranks only")
    a = ap.parse_args()
    mpi = detect_mpi()
    sizes = [2, 4] if a.quick else [2, 4, 8, 16]
    mpirun = [mpi.mpirun] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = str(work / "reinit_recovery")
        subprocess.run([mpi.mpicc, "-O2", f"-I{PRELOAD_DIR}", "-o", exe, str(HERE / "reinit_recovery.c")], check=True)
        for n in sizes:
            r, c = reinit_run(exe, n, work), restart_run(mpirun, exe, n, work)
            rows.append((n, r, c))
            print(n, r, c, flush=True)
    lines = ["# Reinit: recovery from one process failure", "", measured_by("bench/run_reinit.py"), "",
             "Failure (the last rank kills itself at iteration 12) to resumed computation (rank 0 has its",
             "checkpoint back), in seconds. Reinit: `echorun --mode reinit` (ULFM repair, respawn of the failed",
             "rank, in-memory checkpoints with a buddy copy). Restart: the same program under plain `mpirun`,",
             "which dies with the process and is launched again, reloading file checkpoints.", "",
             "| ranks | Reinit: detection | MPI repair | respawn | checkpoint load | **total** | "
             "restart: detection + teardown | relaunch | checkpoint load | **total** | restart / Reinit |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, r, c in rows:
        lines.append(f"| {n} | {r['detection']:.3f} | {r['MPI repair']:.3f} | {r['respawn']:.3f} | "
                     f"{r['checkpoint load']:.3f} | **{r['total']:.3f}** | {c['detection']:.3f} | {c['relaunch']:.3f} "
                     f"| {c['checkpoint load']:.3f} | **{c['total']:.3f}** | {c['total'] / r['total']:.1f}x |")
    lines += ["", "Where the time goes: respawning the failed rank (Open MPI's MPI_Comm_spawn through PRRTE: a new",
              "process, its MPI_Init, the connection to the survivors) is nearly all of Reinit's recovery; detection",
              "(ULFM's notice reaching the survivors) and the MPI repair (shrink, merge, reorder) take milliseconds,",
              "and do not grow with the ranks here. The restart baseline is cheap on one host with no scheduler and",
              "a few bytes of checkpoint: relaunching costs about what one respawn costs. Reinit++'s 6x comes from",
              "clusters, where a relaunch waits for the scheduler and for every rank's MPI_Init at scale and reloads",
              "checkpoints from a parallel file system; none of that can be reproduced on this 2-core machine",
              "(16 ranks share 2 cores)."]
    write("reinit", lines)


if __name__ == "__main__":
    main()
