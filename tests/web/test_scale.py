"""The pages at the sizes clusters run, in a real headless Chromium on a real `mpiecho serve`: stores made of record
files written in the preload library's format (bench/synthetic_run.py) and stored by the real ingest. A 256-rank run
whose one copy diverged 176 times and another died; a history of 130 small runs of programs with close names."""

import urllib.request
from datetime import datetime
from urllib.parse import quote

import pytest

from bench.synthetic_run import Divergence, Plan, store_runs
from echo.store.db import open_store
from tests.conftest import follow, serving
from tests.web.test_history import point_labels
from tests.web.test_pages import shot

DAY = 86_400.0
T0 = datetime(2026, 9, 21, 12).timestamp()  # noon, local time: the list's dates are local


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A store with one run of 256 ranks x 2 copies: rank 137 copy 1 diverged from call 40, 176 times; rank 3
    copy 1 killed at its call 100; rank 201 copy 1 three times slower between calls."""
    base = tmp_path_factory.mktemp("big")
    db = f"sqlite:///{base / 'echo.db'}"
    store_runs(base, [Plan(256, 2, iterations=40, run_id="big", divergences=[Divergence(137, 1, 40, 176)],
                           died={(3, 1): 100}, slow={(201, 1): 3.0})], open_store(db))
    with serving(db, base / "storage") as url:
        yield url


def texts(browser, css):
    from selenium.webdriver.common.by import By

    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]


def cell(browser, gid, rank, copy):
    """The heatmap cell that holds this copy of this rank."""
    from selenium.webdriver.common.by import By

    for c in browser.find_elements(By.CSS_SELECTOR, f"#{gid} rect.cell[data-copy='{copy}']"):
        if int(c.get_attribute("data-first")) <= rank <= int(c.get_attribute("data-last")):
            return c
    raise AssertionError(f"no cell of rank {rank} copy {copy} in {gid}")


def test_big_run_page_says_what_differs_first(browser, big):
    from selenium.webdriver.common.by import By

    html = urllib.request.urlopen(f"{big}/runs/big").read()
    assert len(html) <= 300_000, len(html)  # the goal for a 128-rank page, at twice the ranks
    browser.get(f"{big}/runs/big")
    assert browser.find_element(By.ID, "summary-diverged").text == "Diverged: rank 137 copy 1."
    assert browser.find_element(By.ID, "summary-died").text == "Ended abnormally: rank 3 copy 1 (killed by SIGKILL)."
    # one row per diverged copy, counting its divergences: not 176 rows
    rows = browser.find_elements(By.CSS_SELECTOR, "#divergent tr[data-rank]")
    assert [r.text.split()[:5] for r in rows] == [["137", "1", "40", "176", "0"]]
    events = [r.text.split()[:6] for r in browser.find_elements(By.CSS_SELECTOR, "#events tr")[1:]]
    assert ["divergence", "137", "1", "40", "to", "215"] in events and len(events) == 2, events
    assert events[[e[0] for e in events].index("divergence")] == ["divergence", "137", "1", "40", "to", "215"]
    # the heatmaps mark the diverged copy's cell red and the dead one's black, and no other
    for gid in ("heatmap-mpi", "heatmap-calls"):
        assert "diverged" in cell(browser, gid, 137, 1).get_attribute("class").split()
        assert "died" in cell(browser, gid, 3, 1).get_attribute("class").split()
        marked = browser.find_elements(By.CSS_SELECTOR, f"#{gid} rect.cell.diverged, #{gid} rect.cell.died")
        assert len(marked) == 2
        assert "diverged" not in cell(browser, gid, 137, 0).get_attribute("class")
    title = cell(browser, "heatmap-calls", 3, 1).find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title == "rank 3, copy 1: 101 calls; died: rank 3"
    # the outliers: the slowed copy's rank has the largest difference in compute time, the dead one in calls
    assert texts(browser, "#outliers-compute tr[data-rank]")[0].startswith("201 copy 0:")
    assert texts(browser, "#outliers-calls tr[data-rank]")[0] == "3 copy 1: 101 copy 0: 244 143"
    shot(browser, "run-256-ranks")


def test_big_run_table_is_paged(browser, big):
    from selenium.webdriver.common.by import By

    browser.get(f"{big}/runs/big")
    assert browser.find_element(By.ID, "ranks-pager").text.startswith("Ranks 0 to 63 of 256 (page 1 of 4).")
    ranks = {int(c.get_attribute("data-rank")) for c in browser.find_elements(By.CSS_SELECTOR, "#matrix td[data-rank]")}
    assert ranks == set(range(64))
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#ranks-pager a[rel=next]"))
    assert browser.find_element(By.ID, "ranks-pager").text.startswith("Ranks 64 to 127 of 256 (page 2 of 4).")
    browser.get(f"{big}/runs/big?page=3")
    bad = browser.find_element(By.CSS_SELECTOR, '#matrix td[data-rank="137"][data-copy="1"]')
    assert "cell-bad" in bad.get_attribute("class") and "diverged at call #40" in bad.text


def test_timeline_of_a_range_of_ranks(browser, big):
    """A large run's timeline is drawn on demand for a range of ranks: the form starts at the diverged rank."""
    from selenium.webdriver.common.by import By

    browser.get(f"{big}/runs/big")
    assert not browser.find_elements(By.ID, "call-timeline")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#timeline-form button"))
    labels = [t.get_attribute("textContent") for t in browser.find_elements(By.CSS_SELECTOR, "#call-timeline svg text")]
    assert "rank 137 copy 1 (clone)" in labels and "rank 144 copy 0 (rep)" in labels
    assert not any(t.startswith("rank 136 ") or t.startswith("rank 145 ") for t in labels)


PROGRAMS = {"ring": 110, "ringer": 12, "my prog#2": 8}  # runs of each


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """130 small runs over 130 days, newest last: `./ring` (every 10th diverged, every 7th in SDR mode, the 50th
    took 9 s more), `ringer` and `./my prog#2`."""
    base = tmp_path_factory.mktemp("many")
    db = f"sqlite:///{base / 'echo.db'}"
    plans, day = [], 0
    for program, n in PROGRAMS.items():
        for i in range(n):
            plans.append(Plan(1, 2, iterations=2, run_id=f"{program.replace(' ', '_').replace('#', '')}-{i}",
                              program=f"./{program}", started_at=T0 + day * DAY, mode="sdr" if i % 7 == 3 else "clones",
                              divergences=[Divergence(0, 1, 4)] if i % 10 == 9 else []))
            day += 1
    store_runs(base, plans, open_store(db))
    # the 50th run of ring took 9 s longer: an outlier of its series
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from echo.store.models import Run

    with Session(open_store(db)) as s, s.begin():
        s.execute(update(Run).where(Run.id == "ring-49").values(duration=Run.duration + 9.0))
    with serving(db, base / "storage") as url:
        yield url


def test_runs_list_is_paged_and_filtered(browser, many):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(many)
    assert browser.find_element(By.ID, "runs-count").text.startswith("Runs 1 to 100 of 130 (page 1 of 2).")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tr")) == 101
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#runs-count a[rel=next]"))
    assert browser.find_element(By.ID, "runs-count").text.startswith("Runs 101 to 130 of 130 (page 2 of 2).")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#runs tr")) == 31
    # filters: the program exactly, a mode, a date range; the pages keep them
    browser.get(many)
    browser.find_element(By.NAME, "program").send_keys("ring")
    Select(browser.find_element(By.NAME, "mode")).select_by_visible_text("clones")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#filters button"))
    ring_clones = sum(1 for i in range(110) if i % 7 != 3)
    assert browser.find_element(By.ID, "runs-count").text.startswith(f"Runs 1 to {ring_clones} of {ring_clones}.")
    assert set(texts(browser, "#runs td:nth-child(2)")) == {"ring"}
    browser.get(f"{many}/?status=diverged&since=2026-09-21&until=2026-10-20")  # days 0 to 29 of ring
    assert [r.split()[0] for r in texts(browser, "#runs tr")[1:]] == ["ring-29", "ring-19", "ring-9"]


def test_long_history_labels_what_matters(browser, many):
    """110 runs of ring: the last and the outlier are labelled, every point says its time on hover; ringer's runs
    are not ring's."""
    from selenium.webdriver.common.by import By

    browser.get(f"{many}/programs/ring")
    sections = browser.find_elements(By.CSS_SELECTOR, "section.series")
    assert sum(int(s.get_attribute("data-runs")) for s in sections) == 110
    assert not any("ringer" in s.text for s in sections)
    chart = sections[0]
    labels = point_labels(chart)
    last = chart.find_elements(By.CSS_SELECTOR, "table.history tr[data-run]")[-1]
    assert len(labels) <= 6 and labels[-1] == last.find_elements(By.TAG_NAME, "td")[-1].text, labels
    outlier = chart.find_element(By.CSS_SELECTOR, "table.history tr[data-run='ring-49']")
    assert outlier.find_elements(By.TAG_NAME, "td")[-1].text in labels
    hovers = [t.get_attribute("textContent") for t in chart.find_elements(By.CSS_SELECTOR, "svg use title")]
    assert len(hovers) == int(chart.get_attribute("data-runs"))
    assert all(h.endswith(("copies agreed", "copies diverged")) for h in hovers), hovers
    shot(browser, "history-110-runs")


def test_program_links_are_encoded(browser, many):
    from selenium.webdriver.common.by import By

    browser.get(f"{many}/?program=my+prog%232")
    link = browser.find_element(By.CSS_SELECTOR, "#runs td:nth-child(2) a")
    assert link.get_attribute("href") == f"{many}/programs/{quote('my prog#2')}"
    follow(browser, link)
    assert browser.find_element(By.TAG_NAME, "h1").text == "History of my prog#2"
    assert sum(int(s.get_attribute("data-runs")) for s in browser.find_elements(By.CSS_SELECTOR, "section.series")) == 8


def test_page_errors_are_pages(browser, many):
    from selenium.webdriver.common.by import By

    browser.get(f"{many}/programs/nothing-like-it")
    assert browser.find_element(By.ID, "error").text == "no runs of 'nothing-like-it'"
    browser.get(f"{many}/?since=yesterday")
    error = browser.find_element(By.ID, "error").text
    assert error.startswith("since='yesterday' is not a date: give one as YYYY-MM-DD"), error


def test_small_run_page_with_its_timeline_stays_small(tmp_path):
    """A 4-rank run's page draws the timeline of every call (2,912 of them) and marks its 176 divergences: the bars
    are one image and each kind of mark one set, its labels text; the page stays within the issue's size for a
    128-rank page (it was 543 KB, a path per call)."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    store_runs(tmp_path, [Plan(4, 2, run_id="small", divergences=[Divergence(3, 1, 40, 176)], died={(1, 1): 100},
                               slow={(0, 1): 3.0})], open_store(db))
    with serving(db, tmp_path / "storage") as url:
        html = urllib.request.urlopen(f"{url}/runs/small").read().decode()
    assert len(html.encode()) <= 300_000, len(html)
    timeline = html[html.index('id="call-timeline"'):]
    timeline = timeline[:timeline.index("</svg>")]
    assert "<image" in timeline and all(f"rank {r} copy {c}" in timeline for r in range(4) for c in range(2))
