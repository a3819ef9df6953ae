"""echorun's own time around mpirun, for a program that does nothing (bench/startup.c): the same job natively
(mpirun -n 2) and under `echorun -n 2` and `echorun -n 2 --clones 2` (storing the run, as by default, and with
--no-store), one after the other in one invocation, several times; echorun's time split by phase.

    .venv/bin/python bench/run_startup.py [--trials 5] [--before /path/to/other/.venv/bin/python]

--before: the same cases run, interleaved with these, by another echo (e.g. a checkout of the commit before a
change, in its own virtual environment), so that before and after are measured under the same load.

Each echorun runs in a Python of its own (as the command does) whose phases are timed by wrapping echo's
functions in that process (--child): the interpreter's start, importing echo, finding the MPI (detect_mpi), the
library's cache lookup (ensure_library), the plan and run directory (the rest of launch.prepare), mpirun itself
(launch.launch, which waits for every process's status), the verdicts (the rest of launch.run), storing the run
(store_run). echorun's own time is the command's wall time minus mpirun's; its CPU time is that of its own Python
process (all its threads), which a loaded host stretches less than wall time. Python's bytecode is written (into a
folder of the benchmark's, PYTHONPYCACHEPREFIX, whatever PYTHONDONTWRITEBYTECODE says) and made by the first,
untimed run: an installed echo has its bytecode, and compiling echo's modules is no part of a run. Writes
bench/results/startup.md.
Target (issue #35): echorun's own time <= 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = ("numpy", "sqlalchemy", "alembic", "matplotlib", "fastapi", "jinja2", "cffi")
PHASES = ("interpreter", "import echo", "options", "MPI detection", "library lookup", "plan and run dir",
          "mpirun", "verdicts", "store")


def child(out: Path, argv: list[str]) -> int:
    """echorun in this process, its phases timed; writes them to `out` as JSON."""
    inside = time.perf_counter()
    from echo import cli, launch

    phases = {"import echo": time.perf_counter() - inside}

    def timed(module: object, name: str, phase: str) -> None:
        real = getattr(module, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                phases[phase] = phases.get(phase, 0.0) + time.perf_counter() - start
        setattr(module, name, wrapper)

    for module, name, phase in ((launch, "detect_mpi", "MPI detection"), (launch, "ensure_library", "library lookup"),
                                (launch, "prepare", "prepare"), (launch, "launch", "mpirun"),
                                (launch, "store_run", "store"), (launch, "run", "run"),
                                (cli, "run_command", "command")):
        timed(module, name, phase)
    sys.argv[1:] = argv
    try:
        cli.echorun_entry()  # the command's own entry, and its end (see echorun_entry)
    except SystemExit as e:
        status = e.code
    phases["options"] = phases.pop("command") - phases["run"]
    phases["plan and run dir"] = phases["prepare"] - phases["MPI detection"] - phases["library lookup"]
    phases["verdicts"] = phases.pop("run") - phases.pop("prepare") - phases["mpirun"] - phases.get("store", 0.0)
    phases["inside"] = time.perf_counter() - inside
    times = os.times()
    phases["cpu"] = times.user + times.system  # this process's, not mpirun's (its children)
    phases["modules"] = [m for m in MODULES if m in sys.modules]
    out.write_text(json.dumps(phases))
    return status


def echorun(python: str, argv: list[str], work: Path, env: dict[str, str]) -> dict:
    out = work / "phases.json"
    start = time.perf_counter()
    r = subprocess.run([python, __file__, "--child", str(out), "--", *argv], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"echorun failed ({r.returncode}):\n{r.stderr}")
    phases = json.loads(out.read_text())
    phases["wall"] = wall
    phases["interpreter"] = wall - phases.pop("inside")  # its start and exit, seen from outside
    phases["own"] = wall - phases["mpirun"]
    return phases


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--before", metavar="PYTHON", help="also run every case with this Python's echo")
    a = ap.parse_args()
    from results_file import measured_by, write  # bench/ itself is on the path of a script run from it

    from echo.build import detect_mpi, ensure_library

    mpi = detect_mpi()
    ensure_library(mpi)  # built before: its first build is not echorun's time around mpirun (docs/clusters.md)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "startup"
        subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(HERE / "startup.c")], check=True)
        env = dict(os.environ, ECHO_RUNS_DIR=str(work / "runs"), ECHO_DB=f"sqlite:///{work / 'echo.db'}",
                   PYTHONPYCACHEPREFIX=str(work / "pycache"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        native = [mpi.mpirun, "-n", "2", *(["--allow-run-as-root"] if os.geteuid() == 0 else []), str(exe)]
        argvs = {"echorun -n 2": ["-n", "2", str(exe)],
                 "echorun -n 2 --no-store": ["-n", "2", "--no-store", str(exe)],
                 "echorun -n 2 --clones 2": ["-n", "2", "--clones", "2", str(exe)],
                 "echorun -n 2 --clones 2 --no-store": ["-n", "2", "--clones", "2", "--no-store", str(exe)]}
        cases = {name: (sys.executable, argv) for name, argv in argvs.items()}
        if a.before:
            cases.update({f"before: {name}": (a.before, argv) for name, argv in argvs.items()})
        for python in dict.fromkeys(python for python, _ in cases.values()):  # not timed: the store's first
            echorun(python, argvs["echorun -n 2"], work, env)  # migration, Python's bytecode, a library's build
        load_before = os.getloadavg()
        natives: list[float] = []
        results: dict[str, list[dict]] = {name: [] for name in cases}
        for _ in range(a.trials):  # interleaved, so that the host's load falls on every case alike
            start = time.perf_counter()
            subprocess.run(native, check=True, capture_output=True, env=env)
            natives.append(time.perf_counter() - start)
            for name, (python, argv) in cases.items():
                results[name].append(echorun(python, argv, work, env))
        load_after = os.getloadavg()

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.3f}"

    lines = ["# echorun's own time around mpirun (issue #35: <= 0.3 s)", "",
             measured_by("bench/run_startup.py") + f", {a.trials} trials of each case, interleaved, in one invocation.",
             f"MPI: {mpi.name}. Program: bench/startup.c (MPI_Init, MPI_Finalize), 2 ranks. Load average (1 min) "
             f"{load_before[0]:.1f} before and {load_after[0]:.1f} after, on {os.cpu_count()} cores shared with other "
             "jobs: every time below is stretched by that load, the ratios between cases less so.", "",
             "Median seconds; echorun's own time is its wall time minus mpirun's (launch.launch: mpirun and the wait "
             "for every process's status); echorun's CPU is its own process's user and system time, all its threads "
             "(mpirun and the job excluded).", "",
             "| case | wall | mpirun | echorun's own | echorun's CPU | heavy modules loaded |",
             "| --- | --- | --- | --- | --- | --- |",
             f"| native mpirun -n 2 | {med(natives)} | {med(natives)} | 0 | | |"]
    for name, runs in results.items():
        lines.append(f"| {name} | {med([r['wall'] for r in runs])} | {med([r['mpirun'] for r in runs])} | "
                     f"{med([r['own'] for r in runs])} | {med([r['cpu'] for r in runs])} | "
                     f"{', '.join(runs[0]['modules']) or 'none'} |")
    lines += ["", "echorun's own time by phase (median seconds):", "",
              "| phase | " + " | ".join(results) + " |", "| --- |" + " --- |" * len(results)]
    for phase in PHASES:
        if phase == "mpirun":
            continue
        lines.append(f"| {phase} | " + " | ".join(med([r.get(phase, 0.0) for r in runs]) for runs in results.values())
                     + " |")
    lines.append("")
    write("startup", lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(Path(sys.argv[2]), sys.argv[4:]))
    main()
