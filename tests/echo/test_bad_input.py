"""Bad input, as a new user gives it, to the real commands and the real server: every case ends in one line naming
the problem and the fix, with the exit status (or HTTP code) it should have, never a Python traceback; and the
commands that only read create nothing."""

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.conftest import VENV_BIN, echorun, papi_cannot_count


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(*argv: str, cwd: Path, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    env = dict(os.environ, ECHO_RUNS_DIR=str(cwd / "echo-runs"))
    env.pop("ECHO_DB", None)
    return subprocess.run([str(VENV_BIN / argv[0]), *argv[1:]], cwd=cwd, env=env, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=180)


def to_closed_pipe(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """The command with its standard output into a pipe nobody reads any more (`| head` once head is done)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return command(*argv, cwd=cwd, stdout=write_end)
    finally:
        os.close(write_end)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_bad_input_gets_one_line_and_the_right_status(programs, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    # a real run whose files were then moved away: sensitivity reads them
    r = echorun(["--db", db, "-n", "2", *programs["p2p"]], tmp_path / "moved")
    assert r.returncode == 0, r.stderr
    (tmp_path / "moved" / "plan").unlink()
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("not a database\n")
    absent_dir = tmp_path / "absent" / "dir"
    app = programs["p2p"]

    cases = [  # (argv, exit status, words the one line must hold)
        (["mpiecho", "sensitivity", "--db", db], 2, "no plan in"),
        (["mpiecho", "runs", "--db", "foo://bar"], 2, "'foo://bar' is not a database URL echo can open"),
        (["mpiecho", "report", "--db", f"sqlite:///{not_a_db}"], 2, "is not an echo store (file is not a database)"),
        (["mpiecho", "runs", "--db", f"postgresql+psycopg://echo@127.0.0.1:{free_port()}/echo"], 2,
         "cannot reach the database postgresql+psycopg://echo@127.0.0.1:"),
        (["echorun", "-n", "2", "--clones", "2", "--perturb", "noise:ulp=abc", *app], 2,
         "--perturb noise:ulp=abc: ulp=abc is not a number"),
        (["echorun", "-n", "2", "--clones", "2", "--papi-sets", "PAPI_NOPE", *app], 2,
         "PAPI knows no event PAPI_NOPE here (did you mean "),
        (["mpiecho", "events", "--papi-sets", "PAPI_NOPE"], 2, "mpiecho events lists the events it can count"),
        (["echorun", "-n", "2", "./nonexistent"], 2, "./nonexistent: no such file"),
        (["echorun", "-n", "2", "--colnes", "2", *app], 2, "--colnes (did you mean --clones"),
        # another mode's option (ignored before: the job ran without what was asked)
        (["echorun", "-n", "2", "--clones", "2", "--replicas", "3", *app], 2,
         "--mode clones does not take --replicas (--mode sdr's)"),
        (["echorun", "-n", "2", "--mode", "sdr", "--failure-watchdog", "5", *app], 2,
         "--mode sdr does not take --failure-watchdog (--mode reinit's)"),
        (["mpiecho", "report", "--dbb", db], 2, "--dbb (did you mean --db?)"),
        (["mpiecho", "report", "--db", f"sqlite:///{absent_dir / 'x.db'}"], 2, f"no store at {absent_dir / 'x.db'}"),
    ]
    for argv, status, words in cases:
        p = command(*argv, cwd=work)
        assert "Traceback" not in p.stderr, (argv, p.stderr)
        assert p.returncode == status, (argv, p.returncode, p.stderr)
        assert len(p.stderr.splitlines()) == 1 and words in p.stderr, (argv, p.stderr)
    p = command("mpiecho", "runs", cwd=work)  # the default store, where none was made yet: not an error
    assert p.returncode == 0 and "no runs stored yet: there is no store at" in p.stdout, p.stderr
    # what only reads made nothing: no folder for the absent store, no default store, no run of ./nonexistent
    assert not absent_dir.parent.exists() and list(work.iterdir()) == []

    # a program that never calls MPI_Init: said, not 0, not stored
    p = command("echorun", "--db", db, "-n", "2", "true", cwd=work)
    assert "Traceback" not in p.stderr and p.returncode == 2, p.stderr
    assert "echo: the program never called MPI_Init: " in p.stderr and "the run is not stored" in p.stderr
    listing = command("mpiecho", "runs", "--db", db, cwd=work).stdout
    assert len(listing.splitlines()) == 2 and " true " not in listing  # the header and the p2p run only

    # every command that prints, into a pipe its reader closed: no word, the status of a process ended by SIGPIPE
    # (mpiecho events prints only where PAPI counts: elsewhere it ends in one line, test_papi.py)
    events = [["mpiecho", "events"]] if papi_cannot_count() is None else []
    for argv in (["mpiecho", "report", "--db", db], ["mpiecho", "runs", "--db", db],
                 ["mpiecho", "export", "--json", "--db", db], *events,
                 ["mpiecho", "plan", "--reliability", "--mtbf", "1d", "--runtime", "1h", "-n", "8"]):
        p = to_closed_pipe(*argv, cwd=work)
        assert (p.returncode, p.stderr) == (141, ""), (argv, p.stderr)

    # the server: a bad date in the runs page's filter is the client's error (422), said in one line
    port = free_port()
    server = subprocess.Popen([str(VENV_BIN / "mpiecho"), "serve", "--db", db, "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            try:
                status, _ = get(f"http://127.0.0.1:{port}/api/runs")
                break
            except OSError:
                time.sleep(0.1)
        assert status == 200
        status, body = get(f"http://127.0.0.1:{port}/?since=notadate")
        # a page's bad date is a page that says it (the API's is JSON: tests/echo/server/test_queries.py)
        assert status == 422 and "is not a date" in body and "YYYY-MM-DD" in body and "<html" in body.lower(), body
        assert get(f"http://127.0.0.1:{port}/?since=2020-01-01")[0] == 200
    finally:
        server.terminate()
        log = server.communicate(timeout=30)[0].decode()
    assert "Traceback" not in log, log


def test_what_can_be_checked_before_the_job_is(programs, tmp_path):
    """A store, a JUnit path or a run directory that cannot take the run, or more processes than the machine can
    hold: refused before any process starts (the program prints nothing), in one line naming the problem and the fix,
    exit 2, nothing created. Before, the job ran and then its run was lost (--db, --junit) or 199998 processes
    started (--clones 99999)."""
    work = tmp_path / "work"
    work.mkdir()
    corrupt = tmp_path / "echo.db"
    corrupt.write_bytes(b"SQLite format 3\0" + b"\xff" * 200)  # a store damaged on disk
    app = programs["p2p"]
    cases = [  # (argv, words the one line must hold)
        (["--db", "notaurl://x"], "'notaurl://x' is not a database URL echo can open"),
        (["--db", "sqlite:////proc/echo.db"], "cannot create the store /proc/echo.db: /proc is not writable"),
        (["--db", "postgresql+psycopg2://echo@127.0.0.1/echo"], "pip install 'echo-mpi[postgresql]'"),
        (["--db", f"sqlite:///{corrupt}"], f"sqlite:///{corrupt} is not an echo store"),
        (["--clones", "2", "--sdc", "detect", "--junit", "/proc/x/sdc.xml"],
         "--junit /proc/x/sdc.xml: cannot write the report there"),
        (["--clones", "99999"], "199998 processes (2 ranks with their copies) on the "),
        (["--run-dir", "/proc/echo-run"], "--run-dir /proc/echo-run: cannot write the run's files there"),
    ]
    for options, words in cases:
        p = command("echorun", "-n", "2", *options, *app, cwd=work)
        assert "Traceback" not in p.stderr and p.stdout == "", (options, p.stderr)
        assert p.returncode == 2, (options, p.returncode, p.stderr)
        assert len(p.stderr.splitlines()) == 1 and words in p.stderr, (options, p.stderr)
    assert "--max-per-core" in command("echorun", "-n", "2", "--clones", "99999", *app, cwd=work).stderr
    # the runs directory itself unwritable (no --run-dir), the store elsewhere
    env = dict(os.environ, ECHO_RUNS_DIR="/proc/echo-runs")
    p = subprocess.run([str(VENV_BIN / "echorun"), "--db", f"sqlite:///{tmp_path / 'ok.db'}", "-n", "2", *app],
                       cwd=work, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr
    assert "the runs directory /proc/echo-runs" in p.stderr and "cannot write the run's files there" in p.stderr
    assert list(work.iterdir()) == [] and not (tmp_path / "ok.db").exists()  # nothing created
    assert corrupt.read_bytes().startswith(b"SQLite format 3\0\xff")  # the damaged store left as it was
