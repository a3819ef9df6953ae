"""echorun's own time around mpirun (issue #35): a run loads only what it uses. Python's own record of what a
process imported (-X importtime) says which modules echorun loaded for a trivial job; no time is asserted (this
machine's timing is noisy: bench/run_startup.py measures it)."""

import os
import re
import sqlite3

from tests.conftest import VENV_BIN, compile_programs, run_group

# the server's and the pages' modules: a run never serves nor draws
NEVER_IN_A_RUN = {"echo.server", "matplotlib", "fastapi", "uvicorn", "starlette", "jinja2"}
# the store's (SQLAlchemy, Alembic) and the records' (numpy): loaded only by a run that stores or reads records
STORE_AND_RECORDS = {"sqlalchemy", "alembic", "numpy"}
ECHORUN = "import sys; from echo.cli import echorun_entry; sys.argv[0] = 'echorun'; echorun_entry()"


IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", re.M)


def echorun_importing(mpi, work, *args: str) -> str:
    """echorun's standard error for the trivial job `hostname` with `args` (its files in `work`, its store beside
    it), with a line per module it imported, where it imported it (-X importtime)."""
    (work / "bin").mkdir(parents=True)
    exe = compile_programs(mpi, work / "bin", None, ["hostname"])["hostname"]
    argv = [str(VENV_BIN / "python"), "-X", "importtime", "-c", ECHORUN, "--run-dir", str(work / "run"), *args,
            "-n", "2", *exe]
    p = run_group(argv, 120, dict(os.environ, ECHO_DB=f"sqlite:///{work.parent / 'echo.db'}"))
    assert p.returncode == 0, p.stderr
    assert "host " in p.stdout and "sum 1" in p.stdout  # the job ran
    return p.stderr


def imported(mpi, work, *args: str) -> set[str]:
    """The top-level packages echorun imported to run the trivial job (echorun_importing), and echo's own
    subpackages (echo.collectors, echo.server, ...) by their names."""
    names = IMPORTED.findall(echorun_importing(mpi, work, *args))
    return {".".join(n.split(".")[:2]) if n.startswith("echo.") else n.split(".")[0] for n in names}


def test_a_run_without_the_store_loads_neither_the_store_nor_numpy(mpi, tmp_path):
    """--no-store: nothing is stored and no record is read (no copies to compare), so SQLAlchemy, Alembic and numpy,
    most of echorun's own time on a trivial job, stay unloaded."""
    mods = imported(mpi, tmp_path / "job", "--no-store")
    assert "echo" in mods and "echo.collectors" in mods  # what -X importtime says is read right
    assert not mods & (NEVER_IN_A_RUN | STORE_AND_RECORDS), sorted(mods & (NEVER_IN_A_RUN | STORE_AND_RECORDS))
    assert not (tmp_path / "echo.db").exists()


def test_a_stored_run_loads_no_server_nor_charts(mpi, tmp_path):
    """A run stores itself (SQLAlchemy, numpy for its records), and loads nothing of the server or the pages;
    Alembic migrates a new store, and is not loaded for a store at the newest schema already."""
    first = imported(mpi, tmp_path / "first")
    assert {"sqlalchemy", "alembic", "numpy"} <= first and (tmp_path / "echo.db").is_file()  # stored, migrated
    again = imported(mpi, tmp_path / "again")
    assert "sqlalchemy" in again and "alembic" not in again
    assert not (first | again) & NEVER_IN_A_RUN, sorted((first | again) & NEVER_IN_A_RUN)
    from sqlalchemy import create_engine, text

    with create_engine(f"sqlite:///{tmp_path / 'echo.db'}").connect() as conn:  # both runs are in the store
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar() == 2


def test_the_store_is_checked_before_the_job_without_loading_sqlalchemy(mpi, tmp_path):
    """Before the job, echorun checks that the SQLite store can take the run with Python's own sqlite3; SQLAlchemy
    and numpy, which storing needs, are loaded while mpirun runs (after echorun said the run's directory, the
    last thing it does before starting mpirun), not in front of it. The run is in the store when echorun ends."""
    echorun_importing(mpi, tmp_path / "first")  # creates the store: the second run checks the file
    err = echorun_importing(mpi, tmp_path / "second")
    started = re.search(r"^echo: run \S+ in .*$", err, re.M)
    assert started, err
    before = set(IMPORTED.findall(err[:started.start()]))
    after = set(IMPORTED.findall(err[started.end():]))
    assert "sqlite3" in before and not {m for m in before if m.split(".")[0] in STORE_AND_RECORDS}
    assert {"sqlalchemy", "numpy", "echo.store.ingest"} <= after
    assert "echo: stored run " in err[started.end():]
    with sqlite3.connect(tmp_path / "echo.db") as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
