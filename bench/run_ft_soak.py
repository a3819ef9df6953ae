"""Soak of both fault-tolerant modes: many seeded runs of real programs (C and Python) with 1-3 processes
killed at random ranks, replicas, calls and times, some on a machine loaded by a CPU-burning job the harness
starts beside them. Beside the two-sided programs: one-sided ones (Reinit: fences, post/start/complete/wait
epochs) and programs that call MPI_Abort themselves (a run log they refuse to overwrite). A run passes when
echorun exits 0 and the output is the native run's (SDR: every replica that finished printed the native lines,
and every rank finished in some replica), or when it ended as it must: with the application's abort code. A
run that exits 0 with other output is a wrong success; one that outlives the per-run timeout is a hang (its
process group is killed).

    .venv/bin/python bench/run_ft_soak.py --mode reinit --runs 100          # runs 0..99 of Reinit
    .venv/bin/python bench/run_ft_soak.py --mode sdr --runs 100 --first 0   # runs 0..99 of SDR
    .venv/bin/python bench/run_ft_soak.py --mode reinit --replay 17 -v      # run 17 again, its output shown

Every run is drawn from (mode, seed) alone, so a failing seed replays the same program, ranks, kills and load.
Each mode's runs go to bench/results/ft_soak_<mode>.jsonl (one line a run; a --replay is not recorded);
bench/results/ft_soak.md is written from both files after every invocation (the two modes can run at once).
What echorun said in a failed run, and gdb's stacks of every process of a hung one, go to $TMPDIR/ft_soak/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from results_file import RESULTS_DIR, measured_by, write  # bench/ itself is on the path of a script run from it

from echo.build import PRELOAD_DIR, detect_mpi, ensure_library
from echo.launch import LAUNCH_TRIES, LAUNCHER_FAILED_TO_START
from echo.runformat.constants import EXIT_NOT_FIRED

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE.parent / "tests" / "programs"
BIN = Path(sys.executable).parent
REINIT_ITERATIONS, REINIT_PAUSE_MS = 120, 40  # about 5 s of work: room for 3 kills and their repairs
SDR_ITERATIONS = 60                          # sdr_stencil's default; py_sdr_loop has its own 300
LOADED_FRACTION = 0.35
WATCHDOG_S = 10                              # Reinit's --failure-watchdog in the soak (the default is 60)
ABORT_CODE = 3                               # own_abort.c's and reinit_rma.c abort=LOG's MPI_Abort code
OWN_ABORT_WARMUP = 150                       # own_abort's collectives before its run log: room for kills
HISTORY = RESULTS_DIR / "ft_soak_history.md"
KEEP = Path(tempfile.gettempdir()) / "ft_soak"  # stderr of every failed run, stacks of every hung one


@dataclass
class Run:
    """One soak run, drawn from (mode, seed)."""

    mode: str
    seed: int
    program: str            # file name in tests/programs
    ranks: int
    replicas: int           # SDR only (1 for Reinit)
    kills: list[str]        # echorun --inject items
    loaded: bool            # a CPU-burning job runs beside it
    outcome: str = ""       # ok, failure, wrong (exit 0, other output), hang
    message: str = ""       # echo's message for a failure or a hang
    seconds: float = 0.0
    repairs: int = 0        # repairs (Reinit) or replicas lost (SDR) that echorun reported
    extra: dict = field(default_factory=dict)

    def argv(self, programs: dict[str, list[str]], log: Path) -> list[str]:
        mode = ["--mode", "reinit", "--failure-watchdog", str(WATCHDOG_S)] if self.mode == "reinit" else \
            ["--mode", "sdr", "--replicas", str(self.replicas)]
        return ["-n", str(self.ranks), *mode, "--inject", ";".join(self.kills), *program_args(self, programs, log)]

    @property
    def aborts(self) -> bool:
        """The program calls MPI_Abort itself (its run log exists already, or its replicas race to write it)."""
        return self.program in ("own_abort.c", "reinit_rma.c abort")


def program_args(run: Run, programs: dict[str, list[str]], log: Path) -> list[str]:
    """The command line of the run's program; `log`: the run log the abort programs write (or refuse to)."""
    name, *variant = run.program.split()
    cmd = programs[name]
    if name == "own_abort.c":
        return [*cmd, str(log), str(OWN_ABORT_WARMUP)]
    if name == "reinit_rma.c":
        sync = "fence" if variant == ["abort"] else variant[0]
        return [*cmd, sync, str(REINIT_ITERATIONS), str(REINIT_PAUSE_MS)] + \
            ([f"abort={log}"] if variant == ["abort"] else [])
    if run.mode == "reinit":
        return [*cmd, str(REINIT_ITERATIONS), str(REINIT_PAUSE_MS)]
    return [*cmd, str(SDR_ITERATIONS)] if name.endswith(".c") else cmd


def draw(mode: str, seed: int) -> Run:
    """The run of a seed: program, ranks, 1-3 kills and load, from the seed alone."""
    rng = random.Random(f"{mode}:{seed}")
    loaded = rng.random() < LOADED_FRACTION
    nkills = rng.randint(1, 3)
    if mode == "reinit":
        program = rng.choice(["reinit_iter.c", "py_reinit.py", "reinit_rma.c fence", "reinit_rma.c pscw",
                              "reinit_rma.c abort"])
        ranks = rng.randint(3, 4)
        work = REINIT_ITERATIONS * REINIT_PAUSE_MS / 1000
        # after the restart point (MPI_Reinit, about 1 s after MPI_Init when Python imports numpy on a
        # loaded machine) and well before the end: kills are independent, so some land together or
        # during another kill's repair
        times = sorted(rng.uniform(1.2, 0.7 * work) for _ in range(nkills))
        if nkills > 1 and rng.random() < 0.3:  # the same instant: the ranks of a lost host
            times[1] = times[0]
        kills = [f"kill:rank={rng.randrange(ranks)},after={t:.2f}s" for t in times]
        if program.startswith("reinit_rma.c"):  # a failure starts the job again, a kill's time counts from the new
            kills = kills[:2]                    # deployment's MPI_Init: 3 kills need 4 deployments (at most 3)
        return Run(mode, seed, program, ranks, 1, kills, loaded)
    program = rng.choice(["sdr_stencil.c", "py_sdr_loop.py", "own_abort.c"])
    ranks, replicas = rng.randint(2, 3), rng.choice([2, 2, 3])
    # never every replica of a rank: that ends the job by design (docs/sdr.md)
    victims = [(r, k) for r in range(ranks) for k in range(replicas)]
    rng.shuffle(victims)
    chosen: list[tuple[int, int]] = []
    for r, k in victims:
        if len(chosen) < nkills and sum(1 for c in chosen if c[0] == r) < replicas - 1:
            chosen.append((r, k))
    kills = []
    for r, k in chosen:
        when = f"call={rng.randrange(20, 400)}" if rng.random() < 0.6 else f"after={rng.uniform(0.1, 0.9):.2f}s"
        kills.append(f"kill:rank={r},replica={k},{when}")
    # own_abort: with an earlier run log every replica of rank 1 aborts; without, they race to write it, and the
    # ones that lose abort (all but one, unless kills leave only one to reach it)
    extra = {"earlier_log": rng.random() < 0.5} if program == "own_abort.c" else {}
    return Run(mode, seed, program, ranks, replicas, kills, loaded, extra=extra)


# ---- running ----


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (mpirun starts the ranks in sessions of their own: not in its process group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def stacks(pids: list[int]) -> str:
    """Where each rank of a hung job waits: gdb's backtrace of every process (gdb is on the machine)."""
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:160]
            bt = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "bt 20"], capture_output=True, text=True,
                                timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        out.append(f"== {pid} {cmd}\n" + "\n".join(line for line in bt.splitlines() if line.startswith("#")))
    return "\n".join(out)


def run_group(argv: list[str], timeout: float, keep: Path) -> tuple[int | None, str, str]:
    """Run a command in its own process group; on a timeout the stacks of its processes go to `keep`, and it
    and every process below it are killed (returncode None)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        below = descendants(p.pid)
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.with_suffix(".stacks").write_text(stacks(below))
        for pid in below:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def burners(seconds: float) -> list[subprocess.Popen]:
    """Another job on the machine: one CPU-bound process a core, each ending itself after `seconds`."""
    spin = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(os.cpu_count() or 1)]


def compile_programs(mpicc: str, out: Path) -> dict[str, list[str]]:
    cmds = {}
    for name in ("reinit_iter.c", "sdr_stencil.c", "reinit_rma.c", "own_abort.c"):
        exe = out / Path(name).stem
        subprocess.run([mpicc, "-O1", f"-I{PROGRAMS}", f"-I{PRELOAD_DIR}", "-o", str(exe), str(PROGRAMS / name)],
                       check=True)
        cmds[name] = [str(exe)]
    for name in ("py_reinit.py", "py_sdr_loop.py"):
        cmds[name] = [sys.executable, str(PROGRAMS / name)]
    return cmds


class Native:
    """Output of each (program, ranks) under plain mpirun, computed once."""

    def __init__(self, mpirun: str, programs: dict[str, list[str]], work: Path) -> None:
        self.mpirun, self.programs, self.work, self.cache = mpirun, programs, work, {}

    def __call__(self, run: Run) -> str:
        """The native output; of an abort program, its output when it does not abort (no earlier run log)."""
        key = (run.program, run.ranks)
        if key not in self.cache:
            log = self.work / "native.log"
            log.unlink(missing_ok=True)
            argv = [self.mpirun, "-n", str(run.ranks), "--oversubscribe"] + \
                (["--allow-run-as-root"] if os.geteuid() == 0 else []) + program_args(run, self.programs, log)
            for _ in range(LAUNCH_TRIES):  # mpirun's launcher may fail to start on a loaded machine
                rc, out, err = run_group(argv, 300, KEEP / "native")
                if LAUNCHER_FAILED_TO_START.decode() not in err:
                    break
            if rc != 0:
                raise SystemExit(f"the native run of {run.program} on {run.ranks} ranks failed: {err[-2000:]}")
            self.cache[key] = out
        return self.cache[key]


def lines_of(text: str, rank: int) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"r{rank}: ")]


def sdr_verdict(run: Run, run_dir: Path, stdout: str, native: str) -> str:
    """'' when every replica that finished printed the native lines and every rank finished in one."""
    from echo.runformat.procstatus import read_status

    for rank in range(run.ranks):
        finished = [k for k in range(run.replicas)
                    if (end := read_status(run_dir, k * run.ranks + rank)) and end.state == "finalized"]
        if not finished:
            return f"rank {rank} finished in no replica"
        for k in finished:
            text = stdout if k == 0 else (run_dir / "output" / f"rank{rank}.copy{k}.out").read_text()
            if lines_of(text, rank) != lines_of(native, rank):
                return f"rank {rank} replica {k} printed other lines than the native run"
    return ""


def echo_message(stderr: str) -> str:
    """echo's own words about what went wrong (its error lines), else the end of stderr."""
    words = [line for line in stderr.replace("\0", "").splitlines()
             if line.startswith("echo: ") and any(k in line for k in ("failed", "fail", "cannot", "error", "did not"))]
    text = " / ".join(dict.fromkeys(words)) if words else stderr.replace("\0", "").strip()[-400:]
    return text[:600]


def ended_as_it_must(run: Run, rc: int, err: str) -> str:
    """'' when a run that did not finish ended as it must: with the application's abort code (SDR, or Reinit's
    abort program); else what is wrong."""
    if run.aborts and rc == ABORT_CODE and f"called MPI_Abort with error code {ABORT_CODE}" in err:
        return ""
    return f"exit {rc}: " + echo_message(err)


def execute(run: Run, programs: dict[str, list[str]], native: Native, work: Path, timeout: float,
            verbose: bool) -> Run:
    expected = native(run)
    run_dir = work / f"{run.mode}-{run.seed}"
    log = work / f"{run.mode}-{run.seed}.log"
    log.unlink(missing_ok=True)
    if run.program == "reinit_rma.c abort" or run.extra.get("earlier_log"):
        log.write_text("an earlier run's log\n")
    load = burners(timeout) if run.loaded else []
    t = time.monotonic()
    try:
        rc, out, err = run_group([str(BIN / "echorun"), "--no-store", "--run-dir", str(run_dir),
                                  *run.argv(programs, log)], timeout, KEEP / run_dir.name)
    finally:
        for b in load:
            b.kill()
            b.wait()
    run.seconds = round(time.monotonic() - t, 1)
    if verbose:
        print(out, err, sep="\n", file=sys.stderr)
    run.repairs = err.count("echo: Reinit: rank") if run.mode == "reinit" else err.count("SDR: rank")
    # a failure no MPI call reported (PSCW), caught by the watchdog; a job started again (a program with windows)
    run.extra["watchdog"] = err.count("failed and MPI has not reported it")
    run.extra["redeployed"] = err.count("the job starts again (")
    if rc is None:
        run.outcome, run.message = "hang", f"no end after {timeout:.0f} s; " + echo_message(err)
    elif rc == EXIT_NOT_FIRED:  # a kill landed after the program's end; the job is judged all the same
        wrong = (out != expected and "output differs from the native run") if run.mode == "reinit" \
            else sdr_verdict(run, run_dir, out, expected)
        run.outcome, run.message = ("failure", wrong) if wrong else \
            ("ok", f"exit {rc}: a kill never fired (the program had ended)")
    elif rc != 0:
        wrong = ended_as_it_must(run, rc, err)
        run.outcome, run.message = ("failure", wrong) if wrong else ("ok", "")
        run.extra["ended"] = "" if wrong else "abort"
    else:
        # exit 0 is right only with the native output; a program whose every replica of rank 1 meets the earlier
        # log, or Reinit's abort program, never finishes
        must_abort = run.program == "reinit_rma.c abort" or run.extra.get("earlier_log")
        wrong = ("exit 0, but the application aborts" if must_abort else
                 (out != expected and "output differs from the native run") if run.mode == "reinit"
                 else sdr_verdict(run, run_dir, out, expected))
        run.outcome, run.message = ("wrong", wrong) if wrong else ("ok", "")
    if run.outcome != "ok":  # for a look afterwards: what echorun said (and, of a hang, the stacks)
        KEEP.mkdir(parents=True, exist_ok=True)
        (KEEP / run_dir.name).with_suffix(".err").write_text(err)
    return run


# ---- results ----


def jsonl(mode: str) -> Path:
    return RESULTS_DIR / f"ft_soak_{mode}.jsonl"


def load_runs(mode: str) -> list[Run]:
    """Every run recorded (a seed run twice counts twice: each is a run of the same program, kills and load)."""
    path = jsonl(mode)
    if not path.is_file():
        return []
    return sorted((Run(**json.loads(line)) for line in path.read_text().splitlines()), key=lambda r: r.seed)


def summary(mode: str, runs: list[Run]) -> list[str]:
    fails = [r for r in runs if r.outcome == "failure"]
    hangs = [r for r in runs if r.outcome == "hang"]
    wrong = [r for r in runs if r.outcome == "wrong"]
    ended = [r for r in runs if r.extra.get("ended")]
    progs = sorted({r.program for r in runs})
    lines = [f"| {mode} | {len(runs)} | {len(fails)} | {len(hangs)} | {len(wrong)} | {len(ended)} | "
             f"{sum(bool(r.extra.get('watchdog')) for r in runs)} | "
             f"{sum(r.extra.get('redeployed', 0) for r in runs)} | "
             + ", ".join(f"{p}: {sum(r.program == p for r in runs)}" for p in progs)
             + f" | {sum(r.loaded for r in runs)} | "
             + ", ".join(f"{k}: {sum(len(r.kills) == k for r in runs)}" for k in (1, 2, 3))
             + f" | {sum(r.repairs for r in runs)} | {max((r.seconds for r in runs), default=0):.0f} |"]
    return lines


def report(started: str) -> None:
    modes = {m: load_runs(m) for m in ("reinit", "sdr")}
    lines = ["# Fault-tolerant modes: seeded soak", "", measured_by("bench/run_ft_soak.py") + f" (runs from {started})",
             "", "Each run is drawn from its seed: program (C or Python), ranks, 1-3 kills (random ranks; Reinit:",
             "random times after the restart point, independent, so some land together or during another kill's",
             "repair, and a kill planned while its rank is being restarted strikes the restarted process; SDR:",
             "random replicas, at a random MPI call or time, never every replica of a rank), and",
             f"whether a CPU-burning job (one spinning process a core) runs beside it (about {LOADED_FRACTION:.0%}",
             "of the runs). Programs: two-sided (reinit_iter.c, py_reinit.py, sdr_stencil.c, py_sdr_loop.py),",
             "one-sided under Reinit (reinit_rma.c: fences, post/start/complete/wait epochs), and programs that",
             "call MPI_Abort themselves (own_abort.c under SDR: with an earlier run log every replica of rank 1",
             "aborts, without one they race to write it; reinit_rma.c abort: rank 1 halfway, after repairs).",
             "A run passes when echorun exits 0 with the native run's output (SDR: every replica",
             "that finished printed the native lines, every rank finished in one), or when it ended as it must: with",
             f"the application's abort code ({ABORT_CODE}) (column 'ended by abort'). A wrong success: exit 0 with",
             "other output. Under Reinit a program with windows is started again by a new deployment after a failure",
             "(docs/reinit.md), and a kill in a PSCW epoch, which Open MPI never reports, is caught by echo's watchdog",
             f"(--failure-watchdog {WATCHDOG_S}: the runs where it fired). One run at a time; other",
             "engineers' jobs shared the cores during the soak as well.", "",
             "| mode | runs | failures | hangs | wrong successes | ended by abort | watchdog fired | redeployments | "
             "programs | loaded | kills per run | repairs / replicas lost reported | slowest run (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for mode, runs in modes.items():
        if runs:
            lines += summary(mode, runs)
    bad = [r for runs in modes.values() for r in runs if r.outcome != "ok"]
    lines += ["", "## Failures and hangs", ""]
    # echo's first word on it (the processes it then names as ended are its consequence)
    lines += [f"- {r.mode} seed {r.seed} ({r.outcome}; {r.program}, {r.ranks} ranks, {'; '.join(r.kills)}"
              f"{', loaded' if r.loaded else ''}): {' '.join(r.message.split(' / ')[0].split())[:300]}" for r in bad] \
        or ["None."]
    lines += ["", "## How to run", "", "```sh",
              ".venv/bin/python bench/run_ft_soak.py --mode reinit --runs 100",
              ".venv/bin/python bench/run_ft_soak.py --mode sdr --runs 100",
              ".venv/bin/python bench/run_ft_soak.py --mode reinit --replay SEED -v   # one run again, with its output",
              "```", "", "Every run: `bench/results/ft_soak_<mode>.jsonl`.", ""]
    if HISTORY.is_file():  # earlier soaks' totals, with what changed between them (kept by hand)
        lines += ["", HISTORY.read_text().rstrip(), ""]
    write("ft_soak", lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["reinit", "sdr"], required=True)
    ap.add_argument("--runs", type=int, default=100, help="how many seeds (default 100)")
    ap.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    ap.add_argument("--replay", type=int, metavar="SEED", help="run this one seed again (not recorded)")
    ap.add_argument("--timeout", type=float, default=180, help="seconds after which a run is a hang (default 180)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each run's output")
    a = ap.parse_args()
    seeds = [a.replay] if a.replay is not None else list(range(a.first, a.first + a.runs))
    mpi = detect_mpi()
    ensure_library(mpi)  # built now (minutes on a loaded machine), not inside the first run's timeout
    started = time.strftime("%Y-%m-%d %H:%M")
    with tempfile.TemporaryDirectory() as tmp:
        programs = compile_programs(mpi.mpicc, Path(tmp))
        native = Native(mpi.mpirun, programs, Path(tmp))
        for seed in seeds:
            run = execute(draw(a.mode, seed), programs, native, Path(tmp), a.timeout, a.verbose)
            if a.replay is None:  # a replay is for looking at one run: the soak's results stay as they were
                with jsonl(a.mode).open("a") as f:
                    f.write(json.dumps(asdict(run)) + "\n")
            print(f"{run.mode} {run.seed}: {run.outcome} {run.seconds:.0f}s {run.program} n={run.ranks} "
                  f"{';'.join(run.kills)}{' loaded' if run.loaded else ''} {run.message}", flush=True)
    if a.replay is None:
        report(started)


if __name__ == "__main__":
    main()
