"""The API's list and history agree with the pages: the same date form, counts refused with a message, a program
matched by its name exactly, unknown programs 404 in both, and the pages' errors as pages. Small runs written in
the preload library's record format (bench/synthetic_run.py) and stored by the real ingest."""

from datetime import datetime
from urllib.parse import quote

import pytest

from bench.synthetic_run import Divergence, Plan, store_runs
from echo.store.db import open_store
from tests.echo.server.conftest import make_client

DAY = 86_400.0
T0 = datetime(2026, 9, 21, 12).timestamp()  # noon, local time


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    """runs of ./ring (days 0 to 5, day 3 diverged), ringer (day 6), /opt/ring2/ring (day 7) and ./my prog#2 (day 8)."""
    base = tmp_path_factory.mktemp("queries")
    url = f"sqlite:///{base / 'echo.db'}"
    plans = [Plan(2, 2, iterations=2, run_id=f"ring-{i}", program="./ring", started_at=T0 + i * DAY,
                  divergences=[Divergence(1, 1, 4)] if i == 3 else []) for i in range(6)]
    plans += [Plan(2, 2, iterations=2, run_id="ringer-0", program="./ringer", started_at=T0 + 6 * DAY),
              Plan(2, 2, iterations=2, run_id="ring2-0", program="/opt/ring2/ring", started_at=T0 + 7 * DAY),
              Plan(2, 2, iterations=2, run_id="prog-0", program="./my prog#2", started_at=T0 + 8 * DAY)]
    store_runs(base, plans, open_store(url))
    client, _ = make_client(url, base / "storage")
    return client


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [r["id"] for r in response.json()]


def test_since_and_until_take_the_pages_dates(c):
    assert ids(c.get("/api/runs", params={"since": "2026-09-27"})) == ["prog-0", "ring2-0", "ringer-0"]
    assert ids(c.get("/api/runs", params={"since": "2026-09-22", "until": "2026-09-23"})) == ["ring-2", "ring-1"]
    assert ids(c.get("/api/runs", params={"since": str(T0 + 7.5 * DAY)})) == ["prog-0"]  # a Unix time still works
    r = c.get("/api/runs", params={"since": "last week"})
    assert r.status_code == 422 and r.json() == {"detail": "since='last week' is not a date: give one as YYYY-MM-DD "
                                                            "(or YYYY-MM-DDTHH:MM, or a Unix time)"}
    page = c.get("/", params={"since": "2026-09-27"})
    assert page.status_code == 200 and "Runs 1 to 3 of 3." in page.text


def test_limit_and_offset_are_checked(c):
    r = c.get("/api/runs", params={"limit": "-5"})
    assert r.status_code == 422 and r.json() == {"detail": "limit=-5 is out of range: give a number from 1 to 10000"}
    assert c.get("/api/runs", params={"limit": "many"}).json() == {
        "detail": "limit='many' is not a whole number: give one from 1 to 10000"}
    assert ids(c.get("/api/runs", params={"limit": 2, "offset": 1})) == ["ring2-0", "ringer-0"]
    assert ids(c.get("/api/runs", params={"status": "diverged"})) == ["ring-3"]


def test_program_is_matched_exactly(c):
    """ring is neither ringer nor a program of another directory's name... but /opt/ring2/ring is a ring."""
    assert ids(c.get("/api/programs/ring/history")) == [f"ring-{i}" for i in range(6)] + ["ring2-0"]
    assert ids(c.get("/api/runs", params={"program": "ring"}))[0] == "ring2-0"
    assert "ringer-0" not in ids(c.get("/api/runs", params={"program": "ring", "limit": 100}))
    assert ids(c.get(f"/api/programs/{quote('my prog#2')}/history")) == ["prog-0"]


def test_unknown_program_is_404_in_both(c):
    for path in ("/api/programs/rin/history", "/api/programs/rin/series"):
        r = c.get(path)
        assert r.status_code == 404 and r.json() == {"detail": "no runs of 'rin'"}
    page = c.get("/programs/rin")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert '<p id="error" class="bad">no runs of &#39;rin&#39;</p>' in page.text


def test_page_errors_are_html_and_api_errors_json(c):
    for path, status in (("/runs/nope", 404), ("/runs/ring-0/ranks/x", 422), ("/?page=0", 422), ("/nowhere", 404)):
        r = c.get(path)
        assert r.status_code == status and r.headers["content-type"].startswith("text/html"), (path, r.text)
        assert 'id="error"' in r.text and '<a href="/">All runs</a>' in r.text
    r = c.get("/api/runs/ring-0/procs/x")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
    r = c.get("/api/runs/nope")
    assert r.status_code == 404 and r.json() == {"detail": "no run 'nope'"}


def test_timeline_window_is_checked(c):
    """A timeline's window needs its start and its end, the end after the start, in seconds: else the page says so."""
    for query, says in (("start=5", "start='5', end='': give both"), ("start=5&end=2", "the end after the start"),
                        ("start=soon&end=9", "start='soon' is not a number of seconds"),
                        ("start=-1&end=9", "start='-1' is out of range")):
        r = c.get(f"/runs/ring-0/timeline?{query}")
        assert r.status_code == 422 and r.headers["content-type"].startswith("text/html"), (query, r.text)
        assert says in r.text.replace("&#39;", "'"), (query, r.text)
    r = c.get("/runs/ring-0/timeline?first=0&last=1&start=0&end=1e9")
    assert r.status_code == 200 and 'id="binned-timeline"' in r.text and "from 0.000 s to 1000000000.000 s" in r.text
    # ranks past the run's (it has 2): the page and its form hold the run's, which the browser can send again
    r = c.get("/runs/ring-0/timeline?first=0&last=7")
    assert r.status_code == 200 and "Timeline of ranks 0 to 1 of" in r.text and 'name="last" type="number" min="0" ' \
        'max="1" value="1"' in r.text, r.text
