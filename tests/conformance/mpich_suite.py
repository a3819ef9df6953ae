"""MPICH's own test suite (test/mpi), run natively and under echorun: the same tests must pass.

    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpich_suite                    # the full matrix
    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpich_suite --tests pt2pt/mprobe,coll/nonblocking2
    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpich_suite --work DIR --report-only  # the table of a run
    ECHO_MPICC=/usr/bin/mpicc.mpich PYTHONPATH=. .venv/bin/python -m tests.conformance.mpich_suite --work DIR
    PYTHONPATH=. .venv/bin/python -m tests.conformance.mpich_suite --mpicc /usr/bin/mpicc.mpich --work DIR  # the same

The MPI under test is echo's (echo/build.py: find_mpicc): ECHO_MPICC, else the virtual environment's (PyPI's
Open MPI 5), else mpicc on PATH; --mpicc sets ECHO_MPICC for the runner and every echorun it starts. Runs use
that MPI's own mpirun, with its own options (its echo/families/ Family: launcher_options, env): Open MPI's
--oversubscribe, --allow-run-as-root and -x, or nothing but -genv for MPICH's hydra. SDR modes need ULFM and are
left out, saying so, on an MPI without it.

The suite is MPICH's `test/mpi`, taken from the Debian source package of MPICH (`apt-get source mpich`; a
`deb-src` entry for the archive the machine already uses is added to a file of its own when none is there) and
unpacked once in ~/.cache/echo-mpich-tests (ECHO_MPICH_TESTS). The tests of CATEGORIES are built with the
mpicc of the MPI under test against MPICH's small helper library (test/mpi/util), each test's rank
count, arguments and environment read from its category's testlist. Tests MPICH itself leaves out when it tests
another MPI (MPICH extensions, @mpix@; large-memory tests, @largetest@) are listed as skipped, as are those that
do not build, with the compiler's reason; on an MPI other than MPICH, so are the runs that differ from another
only by MPICH's own tuning variables (MPIR_CVAR_*), which MPICH itself runs as runs of their own.

Every test runs natively (mpirun), then under `echorun --clones 2`, `--clones 3` and, in the categories SDR
covers, `--mode sdr --replicas 2`, one job at a time, each with a time limit after which its whole process group
is killed. A run passes when it prints "No Errors" and exits 0; under echorun the representative's output is
echorun's, and the copies of rank 0 (the rank that prints) must say "No Errors" too, in the run directory.
Every run's outcome is appended to results.jsonl in the work directory (--work), so that a matrix cut short
resumes where it stopped (--resume); each record names the commit of echo that ran it, and the work directory
the MPI (one work directory holds one MPI's runs). Prints and writes a results file of the MPI's own:
bench/results/mpich.md for PyPI's Open MPI 5, bench/results/mpich-on-<family><major version>.md for another
(mpich-on-mpich4.md: Debian's MPICH 4.0.2), never a file that holds another MPI's matrix: counts per mode, a row
per test (each mode's outcome and, for a failure, echo's message) and every difference from native with its
reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from echo.build import MPI, detect_mpi
from echo.launch import LAUNCH_TRIES, LAUNCHER_FAILED_TO_START
from tests.conformance.mpi4py_suite import failure_message, kill_job_processes

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CATEGORIES = ("coll", "comm", "pt2pt", "rma", "group", "datatype", "topo", "io", "init", "attr")
# SDR replicates two-sided communication and what is local; one-sided communication and MPI-IO are outside it
# (docs/sdr.md), so those categories are not run in SDR mode.  Tests in the other categories that use a call
# SDR does not replicate must be refused with that call named.
SDR_CATEGORIES = ("coll", "comm", "pt2pt", "group", "datatype", "topo", "init", "attr")
TIMEOUT = 90.0  # seconds a run may take unless its testlist says more (MPICH's default is 180 s)
# Under echorun a run may take this many times as long as the same test natively took, when that is more than its
# time limit: a run with copies has more processes than the cores, and an MPI whose waiting ranks spin without
# yielding (MPICH over UCX) runs a test of 4 ranks in 56 s here natively, so the time limit alone would call a
# run a hang that only took its share of the cores.
SLOWER = 3.0
SOURCES_FILE = Path("/etc/apt/sources.list.d/echo-mpich-src.list")
NO_ERRORS = re.compile(r"^\s*No [Ee]rrors\s*$", re.M)

# The differences echo has by design, each with its reason (docs/rma.md, docs/sdr.md).  Keyed by
# ("category/program", mode kind: "clones" or "sdr"), on every MPI; test_mpich_suite.py and the results files read
# them here.  Those that come from one MPI family's behaviour are in KNOWN_ON.
KNOWN: dict[tuple[str, str], str] = {
    ("rma/lockcontention3", "clones"): "the target learns of another rank's passive-target updates by a message "
                                       "after that rank's unlock and reads its window with plain loads, without "
                                       "MPI_Win_sync: its copies see the updates at the next synchronization call "
                                       "only (docs/rma.md, the rule); the copy's check fails (exit status 1)",
}
# ("category/program", mode kind, the MPI's lineage as its Family.lineage: "Open MPI" or "MPICH") -> reason
KNOWN_ON: dict[tuple[str, str, str], str] = {
    ("pt2pt/rqstatus", "clones", "Open MPI"): "it reads the MPI_ERROR field of the status MPI_Request_get_status "
                                             "gives for MPI_REQUEST_NULL, which Open MPI leaves as it was "
                                             "(uninitialized in the test): natively the stack happens to hold 0 "
                                             "there, under echo other values",
    ("pt2pt/rqstatus", "sdr", "Open MPI"): "as under clones: it reads a status field Open MPI leaves uninitialized",
}


@dataclass(frozen=True)
class Mode:
    name: str  # as in the table: native, clones 2, clones 3, sdr 2
    copies: int = 0
    sdr: bool = False

    @property
    def native(self) -> bool:
        return self.copies == 0

    @property
    def kind(self) -> str:
        return "native" if self.native else ("sdr" if self.sdr else "clones")

    def covers(self, test: Test) -> bool:
        return not self.sdr or test.category in SDR_CATEGORIES


MODES = (Mode("native"), Mode("clones 2", 2), Mode("clones 3", 3), Mode("sdr 2", 2, sdr=True))


@dataclass(frozen=True)
class Test:
    category: str
    name: str  # the program's name (Makefile.am's)
    nprocs: int
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    time_limit: float | None = None
    skip: str = ""  # why the suite itself leaves the test out here

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name} -n {self.nprocs}" + "".join(f" {a}" for a in self.args) + \
            "".join(f" {k}={v}" for k, v in self.env)


@dataclass
class Outcome:
    outcome: str  # pass, fail, hang, refused (echo stopped the job naming the call), skip
    message: str = ""
    seconds: float = 0.0


class SuiteUnavailable(RuntimeError):
    """MPICH's source package could not be had: the caller skips, saying why."""


# ---- the suite: MPICH's source package ----


def cache_dir() -> Path:
    return Path(os.environ.get("ECHO_MPICH_TESTS", Path.home() / ".cache" / "echo-mpich-tests"))


def suite_dir() -> Path:
    """test/mpi of MPICH's Debian source package, fetched and unpacked once."""
    cache = cache_dir()
    found = sorted(cache.glob("mpich-*/test/mpi"))
    if found:
        return found[-1]
    if not shutil.which("apt-get"):
        raise SuiteUnavailable("MPICH's test suite comes from Debian's source package, and there is no apt-get here")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        got = subprocess.run(["apt-get", "source", "--download-only", "mpich"], cwd=tmp, capture_output=True,
                             text=True)
        if got.returncode != 0 and "deb-src" in got.stderr:  # no source entries yet: add ours, then again
            add_source_entries()
            got = subprocess.run(["apt-get", "source", "--download-only", "mpich"], cwd=tmp, capture_output=True,
                                 text=True)
        if got.returncode != 0:
            raise SuiteUnavailable(f"apt-get source mpich failed: {(got.stderr or got.stdout).strip()[-500:]}")
        tarballs = list(Path(tmp).glob("mpich_*.orig.tar.*"))
        if not tarballs:
            raise SuiteUnavailable(f"apt-get source mpich gave no original tarball: {os.listdir(tmp)}")
        with tarfile.open(tarballs[0]) as tar:  # test/mpi only; renamed into place, so a cut unpack never counts
            members = [m for m in tar.getmembers() if re.match(r"[^/]+/test/mpi/", m.name)]
            tar.extractall(tmp, members, filter="data")
        top = members[0].name.split("/")[0]
        (cache / top / "test").mkdir(parents=True, exist_ok=True)
        os.replace(Path(tmp) / top / "test" / "mpi", cache / top / "test" / "mpi")
    return cache / top / "test" / "mpi"


def archive_entries() -> list[str]:
    """`deb-src` lines for the archives the machine installs from (its `deb` entries with a main component,
    in either of apt's formats)."""
    lines = []
    apt = Path("/etc/apt")
    for f in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]:
        if f.exists() and f != SOURCES_FILE:
            for ln in f.read_text().splitlines():
                if ln.split()[:1] == ["deb"] and " main" in ln:
                    lines.append("deb-src" + ln[3:])
    for f in sorted((apt / "sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", f.read_text()):
            fields = dict(re.findall(r"^([\w-]+):\s*(.*)$", stanza, re.M))
            if "deb" not in fields.get("Types", "").split() or "main" not in fields.get("Components", "").split() \
                    or fields.get("Enabled", "yes") == "no":
                continue
            opts = f" [signed-by={fields['Signed-By']}]" if fields.get("Signed-By", "").startswith("/") else ""
            for uri in fields.get("URIs", "").split():
                lines += [f"deb-src{opts} {uri} {suite} {fields['Components']}"
                          for suite in fields.get("Suites", "").split()]
    return lines


def add_source_entries() -> None:
    if os.geteuid() != 0:
        raise SuiteUnavailable("apt has no deb-src entry and adding one needs root: add a deb-src line for your "
                               "archive, or set ECHO_MPICH_TESTS to a directory holding mpich-*/test/mpi")
    lines = archive_entries()
    if not lines:
        raise SuiteUnavailable("no Debian archive entry in /etc/apt to take MPICH's source package from")
    SOURCES_FILE.write_text("# added by echo's MPICH test-suite runner: MPICH's source package\n"
                            + "\n".join(lines) + "\n")
    # a whole update: one restricted to this file would drop the other entries' package lists
    got = subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True)
    if got.returncode != 0:
        raise SuiteUnavailable(f"apt-get update failed: {got.stderr.strip()[-500:]}")


# ---- the tests: testlists and Makefile.am ----


SUITE_SKIPS = {
    "@mpix@": "an MPICH extension (MPIX_*): MPICH leaves it out when it tests another MPI (--enable-strictmpi)",
    "@largetest@": "a large-memory test: MPICH runs it only when configured with --enable-large-tests",
}


def read_testlist(testdir: Path, category: str, flavor: str = "Open MPI") -> list[Test]:
    """The tests of a category's testlist, as MPICH's runner reads it; `flavor` is the MPI under test's (MPICH
    lineage: MPICH and the MPIs made from it run the tests that set its tuning variables, another MPI has none)."""
    path = next(p for p in (testdir / category / "testlist", testdir / category / "testlist.in") if p.exists())
    tests = []
    for ln in path.read_text().splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        skip = ""
        for mark, why in SUITE_SKIPS.items():
            if ln.startswith(mark):
                ln, skip = ln[len(mark):], why
        words = ln.split()
        if len(words) < 2 or not words[1].isdigit():
            continue  # a subdirectory line
        args, env, limit = [], [], None
        for w in words[2:]:
            key, _, value = w.partition("=")
            if key == "arg":
                args.append(value)
            elif key == "env":
                name, _, v = value.partition("=")
                env.append((name, v))
            elif key == "timeLimit":
                limit = float(value)
            elif key == "resultTest":  # exits non-zero on purpose, or needs mpiexec's own timeout
                skip = skip or f"judged by MPICH's runner its own way (resultTest={value}), not by 'No Errors'"
            elif key == "xfail":
                skip = skip or f"MPICH expects it to fail (xfail={value})"
        if flavor != "MPICH" and env and all(name.startswith("MPIR_CVAR_") for name, _ in env):
            skip = skip or "sets only MPICH's own tuning variables (MPIR_CVAR_*): the same run as without them here"
        tests.append(Test(category, words[0], int(words[1]), tuple(args), tuple(env), limit, skip))
    return tests


def makefile_targets(makefile: Path) -> dict[str, dict[str, list[str]]]:
    """Per program: its SOURCES (.c), CPPFLAGS (-D...) and LDADD (-l...) from a Makefile.am."""
    text = re.sub(r"\\\n", " ", makefile.read_text())
    out: dict[str, dict[str, list[str]]] = {}
    for name, var, value in re.findall(r"^(\w+?)_(SOURCES|CPPFLAGS|LDADD)\s*\+?=\s*(.*)$", text, re.M):
        words = value.split()
        keep = {"SOURCES": [w for w in words if w.endswith(".c")],
                "CPPFLAGS": [w for w in words if w.startswith("-D")],
                "LDADD": [w for w in words if w.startswith("-l")]}[var]
        out.setdefault(name, {}).setdefault(var, []).extend(keep)
    return out


# ---- building against the MPI under test ----


# What MPICH's configure finds on a Linux machine with a C99 compiler; the MPI's own features are asked of mpi.h.
TESTCONF = """\
#define HAVE_STDARG_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_STRINGS_H 1
#define HAVE_UNISTD_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_SYS_TYPES_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_USLEEP 1
#define HAVE_STRDUP 1
#define HAVE_PTHREAD_H 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define USE_LONG_DOUBLE_COMPLEX 1
#define HAVE_MPI_IO 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_SPAWN 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_SHORT 2
#define SIZEOF_VOID_P 8
#define SIZEOF_MPI_OFFSET 8
#define POINTERINT_t int64_t
#define STDC_HEADERS 1
"""
HELPERS = ("util/mtest.c", "util/mtest_common.c", "util/mtest_thread.c", "util/dtypes.c", "dtpools/src/dtpools.c",
           "dtpools/src/dtpools_attr.c", "dtpools/src/dtpools_custom.c", "dtpools/src/dtpools_desc.c",
           "dtpools/src/dtpools_init_verify.c", "dtpools/src/dtpools_misc.c")


@dataclass
class Built:
    exe: dict[str, Path] = field(default_factory=dict)  # by "category/name"
    failed: dict[str, str] = field(default_factory=dict)  # why it did not build


def build_dir(testdir: Path, mpicc: str) -> Path:
    key = hashlib.sha256(f"{testdir.resolve()}\n{mpicc}\n{TESTCONF}".encode()).hexdigest()[:12]
    return cache_dir() / f"build-{key}"


def compile_error(log: str) -> str:
    """The reason a test did not build: the MPICH-only name it uses, else the compiler's first error."""
    mpix = sorted(set(re.findall(r"\b(MPIX_\w+)", log)))
    if mpix:
        return f"uses MPICH extensions ({', '.join(mpix[:3])}) that this MPI lacks"
    lines = log.splitlines()
    first = next((ln for ln in lines if "undefined reference" in ln or "error:" in ln), lines[-1] if lines else "")
    return "does not build: " + re.sub(r"^\S+:\d+:\d+: ", "", first).strip()


def build(testdir: Path, tests: list[Test], mpicc: str, log: bool = True) -> Built:
    """Compile every test program (once: kept in the build directory by MPI and suite) and the helpers."""
    out = build_dir(testdir, mpicc)
    (out / "include").mkdir(parents=True, exist_ok=True)
    (out / "include" / "mpitestconf.h").write_text(TESTCONF)
    # dtpools' sources include "../dtpoolsconf.h": configure's output, written where it looks
    (testdir / "dtpools" / "dtpoolsconf.h").write_text(TESTCONF)
    flags = ["-O1", "-w", f"-I{out / 'include'}", f"-I{testdir / 'include'}", f"-I{testdir / 'dtpools' / 'include'}"]
    helpers = []
    for src in HELPERS:
        obj = out / (Path(src).stem + ".o")
        if not obj.exists():
            subprocess.run([mpicc, *flags, "-c", "-o", str(obj), str(testdir / src)], check=True)
        helpers.append(str(obj))
    built = Built()
    targets: dict[str, dict] = {}
    for test in tests:
        key = f"{test.category}/{test.name}"
        if key in built.exe or key in built.failed:
            continue
        if test.category not in targets:
            targets[test.category] = makefile_targets(testdir / test.category / "Makefile.am")
        spec = targets[test.category].get(test.name, {})
        sources = [str(testdir / test.category / s) for s in spec.get("SOURCES", [f"{test.name}.c"])]
        exe, errfile = out / test.category / test.name, out / test.category / f"{test.name}.err"
        if not exe.exists() and not errfile.exists():
            exe.parent.mkdir(exist_ok=True)
            if log:
                print(f"  building {key}", flush=True)
            p = subprocess.run([mpicc, *flags, *spec.get("CPPFLAGS", []), "-o", str(exe), *sources, *helpers,
                                *spec.get("LDADD", []), "-lm", "-lpthread"], capture_output=True, text=True)
            if p.returncode != 0:
                errfile.write_text(p.stdout + p.stderr)
        if exe.exists():
            built.exe[key] = exe
        else:
            built.failed[key] = compile_error(errfile.read_text())
    return built


# ---- running ----


def run_argv(test: Test, mode: Mode, exe: Path, run_dir: Path, mpi: MPI) -> list[str]:
    """The command of one run: the MPI's mpirun (natively, as tests/conftest.py runs programs) or echorun, with
    the launcher's own options for running as root, beyond the cores (tests that spawn need slots beyond the
    job's) and the test's environment (as echorun passes its own: echo/plan.py)."""
    program = [str(exe), *test.args]
    envs = mpi.family.env(dict(test.env))
    if mode.native:
        return [mpi.mpirun, "-n", str(test.nprocs), *mpi.family.launcher_options(os.geteuid() == 0, True), *envs,
                *program]
    # the records are not needed here; echorun adds --allow-run-as-root itself
    mpirun_args = shlex.join([*mpi.family.launcher_options(False, True), *envs])
    return [str(VENV_BIN / "echorun"), "--run-dir", str(run_dir), "--no-store", "--records-max-mb", "16",
            f"--mpirun-args={mpirun_args}", "-n", str(test.nprocs),
            *(["--mode", "sdr", "--replicas"] if mode.sdr else ["--clones"]), str(mode.copies), *program]


def copy_outputs(run_dir: Path, copies: int) -> dict[int, str]:
    """What each copy of rank 0 other than the representative printed (echorun keeps it in the run directory)."""
    return {c: (run_dir / "output" / f"rank0.copy{c}.out").read_text(errors="replace")
            if (run_dir / "output" / f"rank0.copy{c}.out").exists() else "" for c in range(1, copies)}


def run_one(test: Test, mode: Mode, exe: Path, work: Path, timeout: float = TIMEOUT, echo_from: str = "",
            mpi: MPI | None = None) -> Outcome:
    """One run in its own process group, killed whole when it outlives its time limit; `mpi`: the MPI under test
    (echo's, ECHO_MPICC, when not given)."""
    mpi = mpi or detect_mpi()
    jobdir = work / "jobs" / f"{test.id.replace('/', '_').replace(' ', '_')}.{mode.name.replace(' ', '')}"
    shutil.rmtree(jobdir, ignore_errors=True)
    jobdir.mkdir(parents=True)
    limit = max(timeout, test.time_limit or 0)
    t0 = time.monotonic()
    for _ in range(LAUNCH_TRIES):  # as echorun does: mpirun's launcher may fail to start before anything ran
        rc = run_job(run_argv(test, mode, exe, jobdir / "run", mpi), jobdir, limit,
                     dict(os.environ, ECHO_MPICC=mpi.mpicc, **dict(test.env),
                          **({"PYTHONPATH": echo_from} if echo_from else {})))
        stdout = (jobdir / "stdout").read_text(errors="replace")
        stderr = (jobdir / "stderr").read_text(errors="replace")
        if LAUNCHER_FAILED_TO_START.decode() not in stderr:
            break
    seconds = round(time.monotonic() - t0, 1)
    said = bool(NO_ERRORS.search(stdout))
    if rc is None:
        outcome = Outcome("hang", f"killed after {limit:.0f} s" + (" (after printing No Errors)" if said else ""),
                          seconds)
    elif rc == 0 and said:
        silent = [c for c, text in copy_outputs(jobdir / "run", mode.copies).items() if not NO_ERRORS.search(text)]
        outcome = Outcome("fail", f"copy {silent[0]} of rank 0 did not print No Errors", seconds) if silent \
            else Outcome("pass", "", seconds)
    else:
        message = run_failure(stdout, stderr, rc)
        refused = re.search(r"is not supported (with clones|in SDR mode)", message)
        outcome = Outcome("refused" if refused else "fail", message, seconds)
    if outcome.outcome == "pass":
        shutil.rmtree(jobdir, ignore_errors=True)
    else:
        shutil.rmtree(jobdir / "run" / "records", ignore_errors=True)
    return outcome


def run_job(argv: list[str], jobdir: Path, limit: float, env: dict[str, str]) -> int | None:
    """One job in its own process group, its output in JOBDIR/stdout and stderr: its exit status, or None when it
    outlived `limit` and was killed whole."""
    with open(jobdir / "stdout", "w") as out, open(jobdir / "stderr", "w") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, cwd=jobdir, env=env, start_new_session=True)
        try:
            rc = p.wait(limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            rc = None
        # what mpirun's daemons left in process groups of their own (hydra: each rank in a session of its own)
        kill_job_processes(jobdir)
    return rc


def run_failure(stdout: str, stderr: str, rc: int) -> str:
    """Why a run failed: echo's refusal or the MPI library's error report if there is one, else what the test
    itself said (its first line other than echo's and mpirun's), with echo's account of the process that
    ended the job (a signal, an exit status)."""
    message = failure_message(stderr, rc)
    if re.search(r"is not supported|MPI error in", message) or message.startswith("echo: application rank"):
        return message
    # Open MPI's mpirun's report of a failed job, and hydra's (a frame of "=" lines: BAD TERMINATION ..., PID,
    # EXIT CODE, CLEANING UP ...)
    noise = re.compile(r"^(echo:|prterun|-{10}|\s*$|\s*Process name|\s*Exit code|thus causing|The first process|"
                       r"\[\w+:\d+\]|\s*No [Ee]rrors|=|YOUR APPLICATION TERMINATED|\[proxy:)")
    said = next((ln.strip() for ln in (stdout + "\n" + stderr).splitlines() if not noise.match(ln)), "")
    echo_said = next((ln for ln in stderr.splitlines() if ln.startswith("echo: job failed")), "")
    return "; ".join(x for x in (said[:200], echo_said or f"exit status {rc}") if x)


def load_results(path: Path) -> dict[tuple[str, str], Outcome]:
    out = {}
    if path.exists():
        for ln in path.read_text().splitlines():
            try:
                rec = json.loads(ln)
            except json.JSONDecodeError:
                continue  # a line cut short
            out[(rec["test"], rec["mode"])] = Outcome(rec["outcome"], rec["message"], rec["seconds"])
    return out


def commit_of(checkout: Path) -> str:
    """The commit of the echo that runs (`+` when its files differ from it), for the records."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=10", "HEAD")
    return (head + ("+" if git("status", "--porcelain", "--untracked-files=no") else "")) if head else "?"


def mpi_record(mpi: MPI) -> dict:
    """What the work directory keeps of the MPI under test (mpi.json), and what the results file is told."""
    return {"name": mpi.name, "mpicc": mpi.mpicc, "flavor": mpi.family.lineage, "ulfm": mpi.ulfm}


def mpi_of(work: Path) -> dict[str, str]:
    """The MPI whose runs the work directory holds (mpi.json), {} when none ran yet."""
    path = work / "mpi.json"
    return json.loads(path.read_text()) if path.exists() else {}


def run_matrix(tests: list[Test], built: Built, modes: tuple[Mode, ...], work: Path, timeout: float = TIMEOUT,
               resume: bool = False, log: bool = True, echo_from: str = "",
               mpi: MPI | None = None) -> dict[tuple[str, str], Outcome]:
    """Every test in every mode (each test's modes one after the other, so a matrix cut short is whole for the
    tests it reached); results.jsonl in `work` keeps them as they come, each with the commit that ran it."""
    mpi = mpi or detect_mpi()
    path = work / "results.jsonl"
    held = mpi_of(work)
    if resume and held and held["mpicc"] != mpi.mpicc:
        raise ValueError(f"{work} holds the runs of {held['name']} ({held['mpicc']}), not of "
                         f"{mpi.name} ({mpi.mpicc}): give another --work")
    results = load_results(path) if resume else {}
    if not resume:
        path.unlink(missing_ok=True)
    (work / "mpi.json").write_text(json.dumps(mpi_record(mpi)))
    checkout = Path(echo_from) if echo_from else ROOT
    for i, test in enumerate(tests):
        for mode in modes:
            if (test.id, mode.name) in results:
                continue
            exe = built.exe.get(f"{test.category}/{test.name}")
            if test.skip or exe is None:
                outcome = Outcome("skip", test.skip or built.failed[f"{test.category}/{test.name}"])
            elif not mode.covers(test):
                continue
            elif not mode.native and results.get((test.id, "native"), Outcome("pass")).outcome != "pass":
                outcome = Outcome("skip", "fails natively")
            else:
                native = results.get((test.id, "native"))
                limit = max(timeout, SLOWER * native.seconds) if native and not mode.native else timeout
                outcome = run_one(test, mode, exe, work, limit, echo_from, mpi)
            results[(test.id, mode.name)] = outcome
            with open(path, "a") as f:
                f.write(json.dumps({"test": test.id, "mode": mode.name, **asdict(outcome),
                                    "commit": commit_of(checkout)}) + "\n")
            if log and outcome.outcome != "skip":
                print(f"  [{i + 1}/{len(tests)}] {test.id} {mode.name}: {outcome.outcome} {outcome.message}",
                      flush=True)
    return results


# ---- comparing and reporting ----


def acceptable(mode: Mode, outcome: Outcome) -> bool:
    """Passing, or under SDR refused naming a call SDR does not replicate (docs/sdr.md: what stays outside it)."""
    return outcome.outcome == "pass" or (mode.sdr and outcome.outcome == "refused")


def differences(tests: list[Test], results: dict[tuple[str, str], Outcome], mode: Mode) -> list[tuple[Test, str]]:
    """Tests passing natively that do not pass in `mode` (under SDR: nor are refused with the call named)."""
    out = []
    for test in tests:
        native, got = results.get((test.id, "native")), results.get((test.id, mode.name))
        if native and got and native.outcome == "pass" and not acceptable(mode, got):
            out.append((test, got.outcome))
    return out


def known_reason(test: Test, mode: Mode, flavor: str) -> str:
    """Why `test` differs from native in `mode` by design on an MPI of `flavor` ("" when it should not)."""
    for key in (test.id, f"{test.category}/{test.name}"):
        why = KNOWN.get((key, mode.kind)) or KNOWN_ON.get((key, mode.kind, flavor))
        if why:
            return why
    return ""


def cell(outcome: Outcome | None) -> str:
    if outcome is None:
        return "-"
    if outcome.outcome == "pass":
        return "pass"
    return f"**{outcome.outcome}**: {outcome.message.replace('|', '/')[:160]}" if outcome.outcome != "skip" \
        else "skip"


def commits_of(path: Path, tests: list[Test]) -> dict[str, Counter]:
    """Per mode, how many runs of `tests` each commit of echo ran (results.jsonl)."""
    ids = {t.id for t in tests}
    out: dict[str, Counter] = {}
    if path.exists():
        for ln in path.read_text().splitlines():
            try:
                rec = json.loads(ln)
            except json.JSONDecodeError:
                continue
            if rec["outcome"] != "skip" and rec["test"] in ids:
                out.setdefault(rec["mode"], Counter())[rec.get("commit", "?")] += 1
    return out


def report(tests: list[Test], results: dict[tuple[str, str], Outcome], modes: tuple[Mode, ...],
           timeout: float, mpi: dict, commits: dict[str, Counter] | None = None) -> list[str]:
    """The results file: `mpi` as mpi_of gives it, `commits` as commits_of."""
    ran = [t for t in tests if (t.id, "native") in results]
    reached = {m.name: sum((t.id, m.name) in results for t in ran if m.covers(t)) for m in modes}
    partial = [f"{m.name} stopped part way: {reached[m.name]} of the {sum(m.covers(t) for t in ran)} tests"
               for m in modes[1:] if reached[m.name] < sum(m.covers(t) for t in ran)]
    cut = [f"{c} {sum(t.category == c for t in ran)} of {sum(t.category == c for t in tests)}"
           for c in CATEGORIES if 0 < sum(t.category == c for t in ran) < sum(t.category == c for t in tests)]
    cut += [f"{c} none" for c in CATEGORIES if any(t.category == c for t in tests) and
            not any(t.category == c for t in ran)]
    if cut:
        partial.insert(0, "the matrix stopped part way, tests reached per category: " + ", ".join(cut))
    if not mpi.get("ulfm"):
        partial.append(f"no SDR: {mpi['name']} has no ULFM")
    left_out = ("Not run: " + "; ".join(partial) + ".") if partial else ""
    flavor = mpi.get("flavor", "")
    ran_by = "; ".join(f"{m.name}: " + ", ".join(f"{n} by {c}" for c, n in (commits or {}).get(m.name, {}).items())
                       for m in modes if (commits or {}).get(m.name))
    lines = [
        f"# MPICH's test suite on {mpi['name']}: echo vs native",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {os.uname().nodename} ({os.cpu_count()} cores) by "
        f"`tests/conformance/mpich_suite.py`: MPICH {suite_version()}'s `test/mpi` (Debian's source package), "
        f"categories {', '.join(c for c in CATEGORIES if any(t.category == c for t in tests))}, "
        f"built with {mpi['name']} ({mpi['mpicc']}), run with its mpirun. "
        f"{len(ran)} of {len(tests)} tests reached natively. Runs (not skipped) per mode and commit of echo: "
        f"{ran_by or '-'}.{' ' + left_out if left_out else ''} One run at a time; a run passes when it prints "
        "`No Errors` and exits 0 (under echorun, "
        "the copies of rank 0 must print it too); `hang`: killed after its time limit "
        f"({timeout:.0f} s, or the testlist's; under echorun at least {SLOWER:g} times the native run's time); "
        "`refused`: echo stopped the job naming a call it does not "
        "replicate; `skip`: not run (the reason is in the table: left out by MPICH when testing another MPI, "
        "does not build here, or fails natively)" + ("; on an MPI other than MPICH, the runs that set only MPICH's "
        "tuning variables" if flavor != "MPICH" else "") + ". SDR runs only the categories it covers "
        f"({', '.join(SDR_CATEGORIES)}), on an MPI with ULFM. `tests`: the tests a mode reached (a mode stopped "
        "part way has fewer).",
        "",
        "| mode | tests | " + " | ".join(("pass", "fail", "hang", "refused", "skip")) + " | differences from native |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in modes:
        c = Counter(results[(t.id, mode.name)].outcome for t in ran if (t.id, mode.name) in results)
        diffs = "-" if mode.native else str(len(differences(ran, results, mode)))
        lines.append(f"| {mode.name} | {sum(c.values())} | " + " | ".join(
            str(c[o]) for o in ("pass", "fail", "hang", "refused", "skip")) + f" | {diffs} |")
    lines += ["", "## Differences from native, with their reasons", ""]
    for mode in modes[1:]:
        for test, got in differences(ran, results, mode):
            why = known_reason(test, mode, flavor) or "not explained: a bug to fix"
            lines.append(f"- {mode.name}: `{test.id}`: {got}: {results[(test.id, mode.name)].message} — {why}")
    refused = [(m, t) for m in modes if m.sdr for t in ran
               if results.get((t.id, m.name), Outcome("")).outcome == "refused"]
    if refused:
        lines += ["", "## Refused under SDR (calls outside what SDR replicates, docs/sdr.md)", ""]
        lines += [f"- {m.name}: `{t.id}`: {results[(t.id, m.name)].message}" for m, t in refused]
    lines += ["", "## Every test", "", "| test | " + " | ".join(m.name for m in modes) + " |",
              "|---" * (len(modes) + 1) + "|"]
    for test in ran:
        lines.append(f"| `{test.id}` | " + " | ".join(cell(results.get((test.id, m.name))) for m in modes) + " |")
    skipped = Counter(results[(t.id, "native")].message for t in ran if results[(t.id, "native")].outcome == "skip")
    lines += ["", "## Tests not run, by reason", ""] + [f"- {n}: {why}" for why, n in skipped.most_common()]
    return lines + [""]


def suite_version() -> str:
    found = sorted(cache_dir().glob("mpich-*/test/mpi"))
    return found[-1].parts[-3].removeprefix("mpich-") if found else "?"


def select(testdir: Path, chosen: list[str] | None = None, flavor: str = "Open MPI") -> list[Test]:
    """The tests of CATEGORIES, or of those named (category, category/name, or a test's full id), as read for an
    MPI of `flavor`."""
    tests = [t for c in CATEGORIES for t in read_testlist(testdir, c, flavor)]
    if not chosen:
        return tests
    return [t for t in tests if any(t.id == c or f"{t.category}/{t.name}" == c or t.category == c for c in chosen)]


def default_results(mpi: MPI) -> Path:
    """bench/results/mpich.md is PyPI's Open MPI 5 (the default MPI); another MPI's matrix has a file of its own,
    named by family and major version: mpich-on-mpich4.md, mpich-on-openmpi4.md, mpich-on-intelmpi2021.md."""
    family, _, version = mpi.name.rpartition(" ")
    slug = re.sub(r"\W", "", family.lower()) + version.split(".")[0]
    return ROOT / "bench" / "results" / ("mpich.md" if slug == "openmpi5" else f"mpich-on-{slug}.md")


def other_mpis_file(path: Path, mpi: dict) -> str:
    """The MPI an existing results file measured when it is not `mpi` ("" when it is, or the file is new): a
    matrix is never overwritten by another MPI's."""
    m = re.search(r"built with (.+?) \(", path.read_text()) if path.exists() else None
    return m[1] if m and m[1] not in (mpi["name"], mpi["flavor"]) else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mpicc", default="", help="the mpicc of the MPI under test (sets ECHO_MPICC; default: echo's "
                                                 "MPI, ECHO_MPICC or the virtual environment's)")
    ap.add_argument("--tests", default="", help="only these (comma-separated: coll, pt2pt/mprobe, ...)")
    ap.add_argument("--modes", default=",".join(m.name for m in MODES), help="modes to run, e.g. 'native,clones 2'")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds a run may take (unless its testlist "
                                                                   "says more)")
    ap.add_argument("--work", default=str(cache_dir() / "work"), help="directory of the runs and results.jsonl")
    ap.add_argument("--resume", action="store_true", help="keep the results in --work and run only the rest")
    ap.add_argument("--results", default=None, help="Markdown file to write ('' for none; default: the MPI's own, "
                                                     "bench/results/mpich.md for PyPI's Open MPI 5, "
                                                     "mpich-on-<family><major>.md for another)")
    ap.add_argument("--report-only", action="store_true", help="run nothing: write the results file from what "
                                                                     "--work holds (a matrix stopped part way)")
    ap.add_argument("--echo-from", default="", help="run echorun from this checkout of echo (to measure the code "
                                                    "before a change)")
    args = ap.parse_args(argv)
    if args.mpicc:  # for the runner and every echorun it starts
        os.environ["ECHO_MPICC"] = str(Path(args.mpicc).absolute())
    try:
        testdir = suite_dir()
    except SuiteUnavailable as e:
        print(f"mpich_suite: {e}", file=sys.stderr)
        return 2
    work = Path(args.work)
    mpi = detect_mpi()
    ran_with = mpi_of(work) if args.report_only else {}
    info = ran_with or mpi_record(mpi)
    tests = select(testdir, [x for x in args.tests.split(",") if x], info["flavor"])
    modes = tuple(m for m in MODES if m.name in args.modes.split(","))
    if not modes or not modes[0].native:
        print("mpich_suite: --modes must include native (the reference)", file=sys.stderr)
        return 2
    if not info["ulfm"] and any(m.sdr for m in modes):
        print(f"mpich_suite: {info['name']} has no ULFM: SDR modes left out", file=sys.stderr)
        modes = tuple(m for m in modes if not m.sdr)
    results_file = default_results(mpi) if args.results is None else Path(args.results) if args.results else None
    if results_file and other_mpis_file(results_file, info):
        print(f"mpich_suite: {results_file} holds the matrix of {other_mpis_file(results_file, info)}, not of "
              f"{info['name']}: give --results another file", file=sys.stderr)
        return 2
    if args.report_only:
        results = {k: v for k, v in load_results(work / "results.jsonl").items() if k[1] in {m.name for m in modes}}
    else:
        built = build(testdir, [t for t in tests if not t.skip], mpi.mpicc)
        work.mkdir(parents=True, exist_ok=True)
        try:
            results = run_matrix(tests, built, modes, work, args.timeout, args.resume, echo_from=args.echo_from,
                                 mpi=mpi)
        except ValueError as e:
            print(f"mpich_suite: {e}", file=sys.stderr)
            return 2
    lines = report(tests, results, modes, args.timeout, info, commits_of(work / "results.jsonl", tests))
    if results_file:
        results_file.write_text("\n".join(lines))
    print("\n".join(lines[:12 + len(modes)]))
    return int(any(not known_reason(t, m, info["flavor"]) for m in modes[1:]
                   for t, _ in differences(tests, results, m)))


if __name__ == "__main__":
    sys.exit(main())
