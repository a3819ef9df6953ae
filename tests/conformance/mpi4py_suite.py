"""mpi4py's own test suite, run natively and under echorun: the same tests must pass.

    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpi4py_suite            # the full matrix
    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpi4py_suite -n 2 --clones 2 --modules test_comm,test_p2p_obj

The suite (`test/` of the sdist of the installed mpi4py version) is downloaded once with
pip and cached in ~/.cache/echo (ECHO_CACHE). Every configuration runs the suite's
modules in one MPI job (mpi4py_driver.py), each process (every rank, and under echorun
every copy of every rank) writing every test's outcome to its own file. A call echo
cannot replicate aborts the whole job: the module that was running is recorded as
aborted (with the message and the test in progress), and a new job resumes with the
next module. A job that writes nothing for `--stall` seconds is hung: it is killed and
recorded the same way. Prints a table of counts per configuration and process and every
difference, grouped by cause, and writes them to bench/results/conformance.md.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from echo.build import cache_root, detect_mpi

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("mpi4py_driver.py")
VENV_BIN = Path(sys.executable).parent
# the Python that runs the tests: one whose mpi4py is built against the MPI under test (--python; ECHO_MPICC pins
# that MPI for echo, as for the other tests)
APP_PYTHON = sys.executable
STALL_SECONDS = 300.0
RETRIES = 20  # aborts in a module after which it is given up
OUTCOMES = ("pass", "skip", "fail", "error", "xfail", "xpass", "abort", "hang")
NOT_RUN = "not run"

Process = tuple[int, int]  # (application rank, copy)


@dataclass(frozen=True)
class Config:
    nranks: int
    clones: int  # 0: natively, with mpirun
    sdr: bool = False  # the copies are SDR replicas (--mode sdr --replicas), not clones

    @property
    def name(self) -> str:
        how = f"--mode sdr --replicas {self.clones}" if self.sdr else f"--clones {self.clones}"
        return f"native -n {self.nranks}" if self.native else f"echo -n {self.nranks} {how}"

    @property
    def slug(self) -> str:
        return f"n{self.nranks}-" + ("native" if self.native else f"{'r' if self.sdr else 'c'}{self.clones}")

    @property
    def native(self) -> bool:
        return self.clones == 0

    def processes(self) -> list[Process]:
        return [(r, c) for r in range(self.nranks) for c in range(max(self.clones, 1))]


@dataclass
class Outcome:
    outcome: str  # one of OUTCOMES
    detail: str = ""


@dataclass
class Interruption:
    """A job that ended (abort) or stopped writing (hang) while a module was running."""

    module: str
    kind: str  # "abort" or "hang"
    message: str
    test: str | None  # the test that stopped the job (None: outside any test, in a fixture say)


@dataclass
class ConfigRun:
    config: Config
    outcomes: dict[Process, dict[str, Outcome]]
    interruptions: list[Interruption] = field(default_factory=list)
    seconds: float = 0.0
    jobs: int = 0

    def interruption(self, module: str) -> Interruption | None:
        """The last interruption of a module: what stopped its tests that never ran."""
        return next((i for i in reversed(self.interruptions) if i.module == module), None)

    def counts(self, proc: Process) -> Counter:
        return Counter(o.outcome for o in self.outcomes[proc].values())


# ---- the suite ----


def mpi4py_version() -> str:
    """The version of the mpi4py the tests run with (the suite is that version's)."""
    if APP_PYTHON == sys.executable:
        return importlib.metadata.version("mpi4py")
    return subprocess.run([APP_PYTHON, "-c", "import importlib.metadata as m; print(m.version('mpi4py'))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def suite_dir() -> Path:
    """test/ of the sdist of the installed mpi4py, downloaded and unpacked once."""
    version = mpi4py_version()
    home = cache_root() / f"mpi4py-{version}-suite"
    testdir = home / "test"
    if testdir.is_dir():
        return testdir
    home.mkdir(parents=True, exist_ok=True)
    sdist = home / f"mpi4py-{version}.tar.gz"
    if not sdist.exists():
        with tempfile.TemporaryDirectory(dir=home) as tmp:
            p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                                "--dest", tmp, f"mpi4py=={version}"], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"pip download mpi4py=={version} failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
            os.replace(Path(tmp) / sdist.name, sdist)
    # unpack next to the final place, then rename: an interrupted unpack never looks complete
    with tempfile.TemporaryDirectory(dir=home) as tmp, tarfile.open(sdist) as tar:
        prefix = f"mpi4py-{version}/test/"
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        tar.extractall(tmp, members, filter="data")
        os.replace(Path(tmp) / prefix, testdir)
    return testdir


def suite_modules(testdir: Path) -> list[str]:
    return sorted(p.stem for p in testdir.glob("test_*.py"))


# ---- running one configuration ----


@functools.cache
def mpirun() -> str:
    return detect_mpi().mpirun


@functools.cache
def oversubscribe() -> list[str]:
    """Spawning tests need slots beyond the job's: Open MPI's mpirun must be told (MPICH's hydra runs any number of
    processes, and refuses the option)."""
    return list(detect_mpi().family.oversubscribe_options)


def job_argv(config: Config, testdir: Path, outdir: Path, jobfile: Path, run_dir: Path) -> list[str]:
    program = [APP_PYTHON, str(DRIVER), str(testdir), str(outdir), str(jobfile)]
    if config.native:  # as tests/conftest.py runs programs natively
        argv = [mpirun(), "-n", str(config.nranks), *oversubscribe()]
        root = ["--allow-run-as-root"] if os.geteuid() == 0 and oversubscribe() else []
        return argv + root + program
    # the records are not needed here: echorun bounds them (a process spinning on a test call writes gigabytes);
    # the driver knows which copy it is and writes a log of its own (ECHO_COPY), which a copy's file view would
    # keep under the run directory: the copies write their logs where the runner reads them
    mode = ["--mode", "sdr", "--replicas"] if config.sdr else ["--file-view", "off", "--clones"]
    return [str(VENV_BIN / "echorun"), "--run-dir", str(run_dir), "--no-store", "--records-max-mb", "64",
            *[f"--mpirun-args={a}" for a in oversubscribe()], "-n", str(config.nranks), *mode, str(config.clones),
            *program]


def kill_job_processes(jobdir: Path) -> None:
    """Kill what is left of a killed job: MPI's daemons put the ranks in process groups of their own (MPICH's
    hydra each rank and its proxy in a session of its own), so killing the job's group can leave them running.
    They are found by this job's directory on their command line (mpirun's options, the program's arguments), as
    their working directory (the launchers start ranks in mpirun's) or in their ECHO_PLAN (under echorun: a
    rank's command line is the bare program). Again until none is left: a launcher killed meanwhile may have
    started one more."""
    mark = str(jobdir).encode()
    inside = (str(jobdir), str(jobdir) + os.sep)
    for _ in range(5):
        killed = 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                cwd = os.readlink(proc / "cwd")
                environ = (proc / "environ").read_bytes()
                plan = next((v for v in environ.split(b"\0") if v.startswith(b"ECHO_PLAN=")), b"")
                if mark in (proc / "cmdline").read_bytes() or cwd == inside[0] or cwd.startswith(inside[1]) or \
                        mark in plan:
                    os.kill(int(proc.name), 9)
                    killed += 1
            except (OSError, ProcessLookupError):
                pass  # gone meanwhile, or a kernel thread
        if not killed:
            return
        time.sleep(0.5)


def run_job(argv: list[str], jobdir: Path, stall: float) -> tuple[int, str, bool]:
    """Run one job in its own process group, its output in jobdir/stdout and jobdir/stderr; kill the group
    when no process has written a result for `stall` seconds. Returns (exit status, stderr, whether it hung)."""
    outdir = jobdir / "out"
    with open(jobdir / "stdout", "w") as out, open(jobdir / "stderr", "w") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, start_new_session=True)
        last, progress = -1, time.monotonic()
        hung = False
        while p.poll() is None:
            time.sleep(1)
            size = sum(f.stat().st_size for f in outdir.iterdir())
            if size != last:
                last, progress = size, time.monotonic()
            elif time.monotonic() - progress > stall:
                hung = True
                os.killpg(p.pid, 9)
                p.wait()
                kill_job_processes(jobdir)
    # echo's call records are not needed here
    shutil.rmtree(jobdir / "run" / "records", ignore_errors=True)
    shutil.rmtree(jobdir / "run" / "events", ignore_errors=True)
    return p.returncode, (jobdir / "stderr").read_text(errors="replace"), hung


def read_log(path: Path) -> list[tuple[str, dict]]:
    """(module, record) of every line a process wrote (a last line cut short by a kill is dropped)."""
    module, out = "", []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "module" in rec:
            module = rec["module"]
        out.append((module, rec))
    return out


def failure_message(stderr: str, returncode: int) -> str:
    """What in a failed job's stderr says why: echo's own stop, else the MPI library's error report (an error
    handler that aborts: Open MPI's or MPICH's), else echorun's report of the processes that died, else the last
    line."""
    lines = ["".join(ch for ch in ln if ch.isprintable()).strip() for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and "osc_ucx_component" not in ln]
    for ln in lines:
        if re.search(r"is not supported (with clones|in SDR mode)", ln) or ln.startswith("echo: application rank"):
            return ln
    for i, ln in enumerate(lines):
        m = re.search(r"\*\*\* An error occurred in (\w+)", ln)
        if m:  # Open MPI: the call, then "*** on communicator ..." and "*** MPI_ERR_X: text"
            error = next((e.split("*** ", 1)[1] for e in lines[i + 1:i + 5] if "*** MPI_ERR" in e), "")
            return f"MPI error in {m[1]}: {error}"
    for ln in lines:  # MPICH: "Abort(...) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Send: Invalid rank, ..."
        m = re.search(r"Fatal error in P?(MPIX?_\w+): (.*?)(, error stack:|$)", ln)
        if m:
            return f"MPI error in {m[1]}: {m[2]}"
    for ln in lines:
        if "job failed" in ln:
            return ln
    return lines[-1] if lines else f"exit status {returncode}"


def failing_process(stderr: str) -> Process | None:
    """The process echo names as the one that stopped the job (met an unsupported call, died)."""
    for pattern in (r"echo: application rank (\d+) copy (\d+):", r"job failed: application rank (\d+) copy (\d+)"):
        m = re.search(pattern, stderr)
        if m:
            return int(m[1]), int(m[2])
    return None


def stopped_at(named: Process | None, running: dict[Process, str],
               current: dict[Process, str]) -> tuple[str | None, str | None]:
    """(module, test) that stopped a job. Processes run ahead of each other (a copy needs no other process
    for local work), so it is where the process echo named was, else the test most processes were in. The
    test is None when the process was between tests (in a fixture, at an import)."""
    if named in running:
        return module_of(running[named]), running[named]
    if named in current:
        return current[named], None
    common = Counter(running.values()).most_common(1)
    return (module_of(common[0][0]), common[0][0]) if common else (None, None)


def run_config(config: Config, testdir: Path, modules: list[str], work: Path, stall: float = STALL_SECONDS,
               retries: int = RETRIES, log: bool = True, replay: bool = False) -> ConfigRun:
    """Run the modules in as many jobs as aborts and hangs require; every process's outcomes.

    When a job stops, the processes were not all at the same test. The outcomes kept are those of the
    tests every process finished; the test that stopped the job gets the outcome abort (or hang) on every
    process; the others run again. The next job runs the modules not finished, without the tests kept and
    the one that stopped; a module is given up (its tests left not run) after a hang (each costs `stall`
    seconds), after an abort outside any test, or after `retries` aborts. With `replay`, the jobs are not
    run: their files in `work` (kept by an earlier run) are read again, to report them anew."""
    procs = config.processes()
    run = ConfigRun(config, {p: {} for p in procs})
    remaining, skip = list(modules), set()
    restarts: Counter = Counter()
    while remaining:
        jobdir = work / f"{config.slug}-job{run.jobs}"
        outdir = jobdir / "out"
        if replay:
            if not (jobdir / "result.json").exists():  # the kept run was cut short in this job: the rest is not run
                break
            result = json.loads((jobdir / "result.json").read_text())
            rc, hung, seconds = result["returncode"], result["hung"], result["seconds"]
            stderr = (jobdir / "stderr").read_text(errors="replace")
        else:
            outdir.mkdir(parents=True)
            jobfile = jobdir / "job.json"
            jobfile.write_text(json.dumps({"modules": remaining, "skip": sorted(skip)}))
            t0 = time.monotonic()
            rc, stderr, hung = run_job(job_argv(config, testdir, outdir, jobfile, jobdir / "run"), jobdir, stall)
            seconds = round(time.monotonic() - t0, 1)
            (jobdir / "result.json").write_text(json.dumps({"returncode": rc, "hung": hung, "seconds": seconds}))
        run.jobs += 1
        run.seconds += seconds
        logs = {p: read_log(outdir / f"rank{p[0]}.copy{p[1]}.jsonl") for p in procs
                if (outdir / f"rank{p[0]}.copy{p[1]}.jsonl").exists()}
        done: dict[Process, dict[str, Outcome]] = {p: {} for p in procs}
        running: dict[Process, str] = {}  # the test a process was in when the job ended
        current: dict[Process, str] = {}  # the module it was in
        last: dict[Process, str] = {}  # the last test it finished
        for proc, lg in logs.items():
            for module, rec in lg:
                if rec.get("event") == "start" and "module" in rec:
                    current[proc] = module
                elif rec.get("event") == "end" and "module" in rec:
                    current.pop(proc, None)
                elif "outcome" in rec:
                    done[proc][rec["test"]] = Outcome(rec["outcome"], rec.get("detail", ""))
                    running.pop(proc, None)
                    last[proc] = rec["test"]
                elif "test" in rec:
                    running[proc] = rec["test"]
        settled = {t for t in set().union(*done.values()) if all(t in done[p] for p in procs)}
        for proc in procs:
            run.outcomes[proc].update((t, o) for t, o in done[proc].items() if t in settled)
        skip |= settled
        ended = {m for m in remaining if len(logs) == len(procs)
                 and all(any(rec.get("event") == "end" and rec.get("module") == m for _, rec in lg)
                         for lg in logs.values())}
        unfinished = [m for m in remaining if m not in ended]
        took = f"{config.name}: job {run.jobs}: {len(ended)} module(s) in {seconds:.0f} s"
        if not unfinished:
            if rc != 0:  # every module ran, then the job failed (at MPI_Finalize, say)
                run.interruptions.append(Interruption("(after the last module)", "abort",
                                                      failure_message(stderr, rc), None))
            if log:
                print(f"  {took}", flush=True)
            break
        kind = "hang" if hung else "abort"
        message = f"no result for {stall:.0f} s" if hung else failure_message(stderr, rc)
        module, test = stopped_at(None if hung else failing_process(stderr), running, current)
        if not test and not hung:
            # processes that ended between tests, in a module (a copy whose path parted from its representative's
            # after a test failed on it alone ends in that test's tear-down): after the last test they finished
            after = Counter(last[p] for p in procs if p in last and p in current and p not in running)
            if after:
                test = after.most_common(1)[0][0]
                module = module_of(test)
        module = module or unfinished[0]
        if test:
            for proc in procs:  # what every process finished keeps its outcome
                if test not in run.outcomes[proc]:
                    run.outcomes[proc][test] = Outcome(kind, message)
            skip.add(test)
        run.interruptions.append(Interruption(module, kind, message, test))
        if log:
            print(f"  {took}; {kind} in {test or module}: {message}", flush=True)
        if not any(logs.values()):  # nothing ran at all: resuming would fail the same way
            run.interruptions += [Interruption(m, "abort", message, None) for m in unfinished if m != module]
            break
        restarts[module] += 1
        give_up = hung or not test or restarts[module] >= retries
        remaining = [m for m in unfinished if not (give_up and m == module)]
    return run


# ---- comparing ----


@dataclass(frozen=True)
class Difference:
    test: str
    proc: Process
    expected: str  # the native outcome (for a copy: its representative's)
    got: str
    cause: str  # what explains `got`: the abort or hang of its module, or the failure's exception line


def module_of(test: str) -> str:
    m = re.search(r"\b(test_\w+)\.", test)
    return m.group(1) if m else test


def cause_of(run: ConfigRun, test: str, outcome: Outcome | None) -> str:
    if outcome is None:
        stop = run.interruption(module_of(test))
        return f"not run after its module's {stop.kind}: {short_cause(stop.message)}" if stop else "not run"
    # object addresses differ from process to process; without them, the same failure groups together
    first = re.sub(r"0x[0-9a-f]+", "0x...", outcome.detail.splitlines()[0]) if outcome.detail else ""
    if outcome.outcome in ("abort", "hang"):
        return f"{outcome.outcome}: {short_cause(first)}"
    return f"{outcome.outcome}: {first}"


def short_cause(message: str) -> str:
    """An abort message without what differs between processes (rank, copy, pid), to group by."""
    m = re.search(r"(\w+ is not supported (with clones|in SDR mode))", message)
    if m:
        return m.group(1)
    message = re.sub(r"application rank \d+ copy \d+ \(process \d+, pid \d+\)", "a process", message)
    return re.sub(r"^echo: application rank \d+ copy \d+: ", "", message)


def outcome_name(outcomes: dict[str, Outcome], test: str) -> str:
    return outcomes[test].outcome if test in outcomes else NOT_RUN


def differences(native: ConfigRun, echo: ConfigRun) -> list[Difference]:
    """Every test whose outcome on a representative differs from the native rank's, and on a copy from
    its representative's."""
    out = []
    for rank, copy in echo.config.processes():
        ref = native.outcomes[(rank, 0)] if copy == 0 else echo.outcomes[(rank, 0)]
        got = echo.outcomes[(rank, copy)]
        for test in sorted(set(ref) | set(got)):
            expected, actual = outcome_name(ref, test), outcome_name(got, test)
            if expected != actual:
                out.append(Difference(test, (rank, copy), expected, actual, cause_of(echo, test, got.get(test))))
    return out


def passing_differences(native: ConfigRun, echo: ConfigRun) -> list[Difference]:
    """The differences the conformance test fails on: a test passing on one side only."""
    return [d for d in differences(native, echo) if "pass" in (d.expected, d.got)]


# ---- reporting ----


def counts_table(runs: list[ConfigRun], natives: dict[int, ConfigRun]) -> list[str]:
    lines = ["| configuration | rank | copy | " + " | ".join(OUTCOMES) + f" | {NOT_RUN} | differences | wall time |",
             "|---" * (len(OUTCOMES) + 6) + "|"]
    for run in runs:
        every = set().union(*(set(o) for o in run.outcomes.values()), natives[run.config.nranks].outcomes[(0, 0)])
        diffs = Counter(d.proc for d in differences(natives[run.config.nranks], run)) if not run.config.native \
            else Counter()
        for proc in run.config.processes():
            c = run.counts(proc)
            cells = [run.config.name if proc == (0, 0) else "", str(proc[0]), str(proc[1])]
            cells += [str(c[o]) for o in OUTCOMES] + [str(len(every - set(run.outcomes[proc])))]
            cells += ["-" if run.config.native else str(diffs[proc])]
            cells += [f"{run.seconds:.0f} s, {run.jobs} job(s)" if proc == (0, 0) else ""]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def grouped_differences(runs: list[ConfigRun], natives: dict[int, ConfigRun]) -> list[str]:
    """Every difference, grouped by cause, then by test: where (configuration, rank, copy) it shows."""
    by_cause: dict[str, dict[tuple[str, str, str], list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        if run.config.native:
            continue
        for d in differences(natives[run.config.nranks], run):
            where = f"{run.config.name} r{d.proc[0]}" + (f"c{d.proc[1]}" if d.proc[1] else "")
            by_cause[d.cause][(d.test, d.expected, d.got)].append(where)
    lines = []
    for cause, tests in sorted(by_cause.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines += ["", f"### {cause} ({len(tests)} test(s))", ""]
        if cause.startswith(NOT_RUN):  # what explains them is their module's interruption: one line a module
            per_module: dict[str, tuple[int, set[str]]] = {}
            for (test, _, _), where in tests.items():
                count, places = per_module.get(module_of(test), (0, set()))
                per_module[module_of(test)] = (count + 1, places | set(where))
            lines += [f"- `{m}`: {n} test(s): {', '.join(sorted(w))}" for m, (n, w) in sorted(per_module.items())]
            continue
        for (test, expected, got), where in sorted(tests.items()):
            lines.append(f"- `{test}`: {expected} natively (or on copy 0), {got} here: {', '.join(where)}")
    return lines


def interruptions_table(runs: list[ConfigRun]) -> list[str]:
    lines = ["| configuration | module | stopped | message | test in progress |", "|---|---|---|---|---|"]
    for run in runs:
        for stop in run.interruptions:
            lines.append(f"| {run.config.name} | {stop.module} | {stop.kind} | {short_cause(stop.message)} | "
                         f"{stop.test or '-'} |")
    return lines


def report(runs: list[ConfigRun], modules: list[str], stall: float, retries: int) -> list[str]:
    natives = {r.config.nranks: r for r in runs if r.config.native}
    version = mpi4py_version()
    mpi = detect_mpi()
    return [
        "# mpi4py's test suite: echo vs native",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {os.uname().nodename} ({os.cpu_count()} cores) by "
        f"`tests/conformance/mpi4py_suite.py`: mpi4py {version}'s `test/` ({len(modules)} modules) with "
        f"{mpi.family.name} ({mpi.mpicc}).",
        "Each configuration runs the modules in one job. When an abort (an unsupported call, a crash) or a "
        f"hang (no result for {stall:.0f} s) stops a job, the test that stopped it is recorded as `abort` or "
        "`hang` on every process and a new job resumes without it and without the tests every process had "
        f"finished; a module is given up after a hang, an abort outside any test or {retries} aborts. Wall "
        "time includes every job. Outcomes are per process: each rank, and under echo each copy. "
        f"`{NOT_RUN}`: a test that other processes of the comparison ran and this one never did (its module "
        "was given up). `differences`: tests whose outcome differs from the native rank's (on a copy: from its "
        "representative's).",
        "",
        *counts_table(runs, natives),
        "",
        "## Interrupted modules",
        "",
        *interruptions_table(runs),
        "",
        "## Differences, by cause",
        *grouped_differences(runs, natives),
        "",
    ]


def matrix(ranks: list[int], clones: list[int], replicas: list[int] = ()) -> list[Config]:
    return [Config(n, c) for n in ranks for c in [0, *clones]] + [Config(n, r, sdr=True) for n in ranks
                                                                  for r in replicas]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--ranks", default="1,2,3", help="application sizes, e.g. 1,2,3")
    ap.add_argument("--clones", default="2,3", help="copies per rank under echorun, e.g. 2,3 ('' for native runs only)")
    ap.add_argument("--sdr", default="", help="replicas per rank under echorun --mode sdr, e.g. 2 (default: none)")
    ap.add_argument("--modules", default="", help="only these test modules (comma-separated)")
    ap.add_argument("--stall", type=float, default=STALL_SECONDS, help="seconds without a result that make a hang")
    ap.add_argument("--retries", type=int, default=RETRIES, help="aborts in a module after which it is given up")
    ap.add_argument("--results", default=str(ROOT / "bench" / "results" / "conformance.md"),
                    help="Markdown file to write ('' for none)")
    ap.add_argument("--keep", help="keep the jobs' files in this directory")
    ap.add_argument("--replay", help="run nothing: report again the jobs kept in this directory (by --keep)")
    ap.add_argument("--python", default=sys.executable,
                    help="the Python that runs the tests, its mpi4py built against the MPI that ECHO_MPICC names "
                         "(default: this one)")
    args = ap.parse_args(argv)
    global APP_PYTHON
    APP_PYTHON = args.python
    try:
        mpi4py_version()
    except (OSError, subprocess.CalledProcessError, importlib.metadata.PackageNotFoundError):
        ap.error(f"--python {args.python}: not a Python with mpi4py (scripts/mpis.sh builds one for each MPI)")
    testdir = suite_dir()
    modules = args.modules.split(",") if args.modules else suite_modules(testdir)
    configs = matrix([int(x) for x in args.ranks.split(",")], [int(x) for x in args.clones.split(",") if x],
                     [int(x) for x in args.sdr.split(",") if x])
    work = Path(args.replay or args.keep or tempfile.mkdtemp(prefix="echo-mpi4py-"))
    if args.replay:  # the configurations the kept run got to
        configs = [c for c in configs if (work / f"{c.slug}-job0" / "result.json").exists()]
    runs = []
    try:
        for config in configs:
            runs.append(run_config(config, testdir, modules, work, args.stall, args.retries,
                                   replay=bool(args.replay)))
            lines = report(runs, modules, args.stall, args.retries)
            if args.results:  # after each configuration, so a long matrix cut short still leaves its results
                Path(args.results).write_text("\n".join(lines))
    finally:
        if not (args.keep or args.replay):
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    natives = {r.config.nranks: r for r in runs if r.config.native}
    return int(any(passing_differences(natives[r.config.nranks], r) for r in runs if not r.config.native))


if __name__ == "__main__":
    sys.exit(main())
