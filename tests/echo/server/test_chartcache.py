"""The run page's charts are drawn once for what they show (echo/server/chartcache.py): serving a stored run again draws
nothing and serves the same page, while a run whose record files were moved away, or that was re-ingested with other
values under its id, is drawn again from what it is now. Real runs under mpirun, stored by the real ingest, served
by the page code the server runs; what is counted is the figures matplotlib really made."""

import json
import shutil

import matplotlib.pyplot as plt
import pytest
from sqlalchemy.orm import Session

from echo.server import pages
from echo.store.db import open_store
from echo.store.ingest import ingest
from tests.conftest import echorun


@pytest.fixture
def figures(monkeypatch):
    """How many matplotlib figures were made so far (every chart is one, echo/charts.py's figure())."""
    made = [0]
    subplots = plt.subplots

    def counted(*args, **kwargs):
        made[0] += 1
        return subplots(*args, **kwargs)

    monkeypatch.setattr(plt, "subplots", counted)
    return made


def test_run_page_is_drawn_once_until_what_it_shows_changes(programs, tmp_path, figures):
    first = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["sdc_loop"]], tmp_path / "first")
    slowed = echorun(["--no-store", "-n", "2", "--clones", "2", "--inject", "slow:rank=1,copy=1,factor=4",
                      *programs["sdc_loop"]], tmp_path / "slowed")
    assert first.returncode == 0 and slowed.returncode == 0, first.stderr + slowed.stderr
    engine = open_store(f"sqlite:///{tmp_path / 'echo.db'}")
    run_id = ingest(tmp_path / "first", engine)

    def serve() -> str:
        with Session(engine) as s:
            return pages.run_page(s, run_id=run_id)

    page = serve()
    drawn = figures[0]
    assert 'id="call-timeline"' in page and 'id="mpi-time-chart"' in page and drawn >= 2
    assert serve() == page and figures[0] == drawn  # served again: the same page, nothing drawn

    # the run directory's records moved away: the timeline is gone, as it is from a page drawn now
    shutil.move(tmp_path / "first" / "records", tmp_path / "records-moved")
    assert 'id="call-timeline"' not in serve()
    shutil.move(tmp_path / "records-moved", tmp_path / "first" / "records")

    # another run stored under its id (a re-ingest that replaced its rows): its own times are drawn
    meta = json.loads((tmp_path / "slowed" / "run.json").read_text())
    ingest(tmp_path / "slowed", engine, dict(meta, run_id=run_id))
    before = figures[0]
    again = serve()
    assert figures[0] > before and again != page
    with Session(engine) as s:  # the chart of copies' time in MPI now says the slowed run's seconds
        from echo.server import crud, plots
        assert plots.mpi_times(crud.procs(s, run_id=run_id), crud.call_summaries(s, run_id=run_id)) in again
