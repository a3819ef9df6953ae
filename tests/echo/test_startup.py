"""echorun's own time around mpirun (issue #35): a run loads only what it uses. Python's own record of what a
process imported (-X importtime) says which modules echorun loaded for a trivial job; no time is asserted (this
machine's timing is noisy: bench/run_startup.py measures it)."""

import os
import re

from tests.conftest import VENV_BIN, compile_programs, run_group

# the server's and the pages' modules: a run never serves nor draws
NEVER_IN_A_RUN = {"echo.server", "matplotlib", "fastapi", "uvicorn", "starlette", "jinja2"}
# the store's (SQLAlchemy, Alembic) and the records' (numpy): loaded only by a run that stores or reads records
STORE_AND_RECORDS = {"sqlalchemy", "alembic", "numpy"}
ECHORUN = "import sys; from echo.cli import echorun_entry; sys.argv[0] = 'echorun'; echorun_entry()"


def imported(mpi, work, *args: str) -> set[str]:
    """The top-level packages echorun imported to run the trivial job `hostname` with `args` (its files in `work`,
    its store beside it), and echo's own subpackages (echo.collectors, echo.server, ...) by their names."""
    (work / "bin").mkdir(parents=True)
    exe = compile_programs(mpi, work / "bin", None, ["hostname"])["hostname"]
    argv = [str(VENV_BIN / "python"), "-X", "importtime", "-c", ECHORUN, "--run-dir", str(work / "run"), *args,
            "-n", "2", *exe]
    p = run_group(argv, 120, dict(os.environ, ECHO_DB=f"sqlite:///{work.parent / 'echo.db'}"))
    assert p.returncode == 0, p.stderr
    assert "host " in p.stdout and "sum 1" in p.stdout  # the job ran
    names = [m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", p.stderr, re.M)]
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
