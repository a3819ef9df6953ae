"""One real run for every export's test: 2 ranks x 2 copies of sdc_loop with a PAPI counter set per copy (where PAPI
counts), SDC
detection and a bit flipped in rank 1 copy 1's 20th call (a divergence event at a call), stored in SQLite."""

import json

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.store.db import open_store
from echo.store.models import CallSummary, Event, Metric, Proc
from tests.conftest import echorun, papi_args


@pytest.fixture(scope="session")
def exported_run(programs, tmp_path_factory):
    """(db url, run id, the store's rows of it) of the run."""
    base = tmp_path_factory.mktemp("export")
    db = f"sqlite:///{base / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", *papi_args(), "--sdc", "detect",
                 "--inject", "bitflip:rank=1,copy=1,call=20", *programs["sdc_loop"]], base / "run")
    assert r.returncode == 20, r.stderr  # diverged, as injected
    run_id = json.loads((base / "run" / "run.json").read_text())["run_id"]
    with Session(open_store(db)) as s:
        rows = {model.__name__: s.scalars(select(model).where(model.run_id == run_id)).all()
                for model in (Proc, CallSummary, Event, Metric)}
        s.expunge_all()
    return db, run_id, rows
