"""The bulk ingest (record files read a batch at a time into one buffer, every process's calls summarized in one
numpy pass, rows handed to the driver's executemany) stores what the ingest before it stored, row for row and bit
for bit: a real run with copies, a divergence and a crashed process, ingested by both."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select

from echo.store.db import open_store
from echo.store.ingest import ingest
from echo.store.models import Base
from tests.conftest import echorun

BEFORE = "7bea1a4"  # main before the bulk ingest: its echo/ ingests the same run into a store of its own
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'echo.db'}"
    return request.getfixturevalue("postgres_db")


def old_echo(tmp_path: Path) -> Path:
    """echo/ as it was at BEFORE, unpacked from the repository (the test needs the checkout's history)."""
    out = tmp_path / "before"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE, "echo"], capture_output=True)
    if archive.returncode:
        pytest.skip(f"no git history of {BEFORE} here: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out


def rows(url: str) -> dict[str, list[tuple]]:
    """Every row of every table of the store, in the order of its key."""
    engine = create_engine(url)
    with engine.connect() as conn:
        out = {t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
               for t in Base.metadata.sorted_tables}
    engine.dispose()
    return out


def test_the_bulk_ingest_stores_what_the_ingest_before_it_stored(programs, tmp_path, store_url):
    diverged = echorun(["--no-store", "-n", "3", "--clones", "2", "--sdc", "detect", "--inject",
                        "bitflip:rank=1,copy=1,call=20", *programs["sdc_loop"]], tmp_path / "diverged")
    assert diverged.returncode == 20, diverged.stderr  # the flip detected
    crashed = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["crash"], "0", "1", "segv"],
                      tmp_path / "crashed")
    assert crashed.returncode != 0, crashed.stderr
    before = old_echo(tmp_path)
    old_url = f"sqlite:///{tmp_path / 'before.db'}"
    for run in ("diverged", "crashed"):
        subprocess.run([sys.executable, "-c", "import sys; from echo.store.db import open_store; "
                        "from echo.store.ingest import ingest; ingest(sys.argv[1], open_store(sys.argv[2]))",
                        str(tmp_path / run), old_url], check=True, cwd=before,
                       env=dict(os.environ, PYTHONPATH=str(before)))  # cwd: `-c` puts it first on the path
        ingest(tmp_path / run, open_store(store_url))
    old, new = rows(old_url), rows(store_url)
    assert len(new["procs"]) == 10 and len(new["call_summaries"]) > 10 and new["events"], new
    assert any(e[2] == "divergence" for e in new["events"]) and any("SIGSEGV" in p[8] for p in new["procs"])
    for table in old:
        assert new[table] == old[table], table
