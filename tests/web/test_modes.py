"""Each fault-tolerant mode's run page says what its mode did, in its terms, in a real headless Chromium: a real
Reinit run whose rank 1 was killed and restarted (times from the run's start, durations, the restarted rank not
called dead), and SDR's replicas not described as clones' copies."""

import json
import re

import pytest
from sqlalchemy.orm import Session

from echo.server import crud
from echo.store.db import open_store
from tests.conftest import echorun, server_with, serving
from tests.web.test_pages import shot


@pytest.fixture(scope="module")
def repaired(programs, tmp_path_factory):
    """(URL, run id, store URL) of a real Reinit run of 3 ranks whose rank 1 was killed after 1 s and restarted."""
    base = tmp_path_factory.mktemp("reinit")
    db = f"sqlite:///{base / 'echo.db'}"
    r = echorun(["--db", db, "-n", "3", "--mode", "reinit", "--inject", "kill:rank=1,after=1s",
                 *programs["reinit_iter"], "80", "40"], base / "run", timeout=240)
    assert r.returncode == 0, r.stderr
    run_id = json.loads((base / "run" / "run.json").read_text())["run_id"]
    with serving(db, base / "storage") as url:
        yield url, run_id, db


def test_reinit_page_tells_repairs_in_times_from_the_start(browser, repaired):
    from selenium.webdriver.common.by import By

    url, run_id, db = repaired
    with Session(open_store(db, create=False)) as s:
        run = crud.get_run(s, run_id=run_id)
        (repair,) = crud.events(s, run_id=run_id, kind="reinit")
        started = run.started_at
    # the library's words: epoch seconds of each step of the repair
    stamps = dict(re.findall(r"(seen|shrunk|spawned|repaired) ([\d.]+)", repair.message))
    browser.get(f"{url}/runs/{run_id}")
    help_text = browser.find_element(By.ID, "mode-help").text
    assert help_text.startswith("Reinit: each rank ran as one process") and "Copy 0" not in help_text
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#repairs tr[data-repair='1'] td")]
    assert cells[:3] == ["1", "rank 1", f"{float(stamps['seen']) - started:.2f} s after the start"]
    assert cells[6] == f"{float(stamps['repaired']) - float(stamps['seen']):.2f} s"
    assert browser.find_element(By.ID, "summary-restarted").text == "Restarted by Reinit, then finished: rank 1."
    assert not browser.find_elements(By.ID, "summary-died")
    cell = browser.find_element(By.CSS_SELECTOR, '#matrix td[data-rank="1"][data-copy="0"]')
    assert "restarted" in cell.text and "no MPI_Finalize" not in cell.text and "cell-fixed" in cell.get_attribute(
        "class")
    events = browser.find_element(By.ID, "events").text
    assert "repair 1: rank 1 failed, seen" in events and stamps["seen"][:6] not in events  # no epoch stamps
    reinit_row = [td.text for td in browser.find_elements(By.XPATH, "//table[@id='events']//tr[td[1]='reinit']/td")]
    assert reinit_row[3] == "", "a repair's number is not a call"
    shot(browser, "reinit-run")


@pytest.fixture(scope="module")
def sdr_served(real_runs, tmp_path_factory):
    """The real SDR run whose replica 1 of rank 0 was excluded as slow, uploaded to a real server."""
    with server_with(tmp_path_factory.mktemp("sdr"), [real_runs["excluded"]]) as (url, _token):
        yield url


def test_sdr_page_speaks_of_replicas(browser, sdr_served, real_runs):
    from selenium.webdriver.common.by import By

    browser.get(f"{sdr_served}/runs/{real_runs['excluded'][1]}")
    help_text = browser.find_element(By.ID, "mode-help").text
    assert help_text.startswith("SDR: each rank ran as 2 replicas. Every replica computes and communicates")
    assert "Copy 0" not in help_text
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#matrix tr:first-child th")]
    assert headers == ["rank", "replica 0", "replica 1"]
    assert browser.find_element(By.ID, "summary-excluded").text.startswith("Excluded as slow: rank 0 replica 1")
