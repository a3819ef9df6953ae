"""The run page's matplotlib charts in a real headless Chromium: the timeline of MPI calls per rank x copy and
the counters side by side per copy, checked for the values they show against the server's API."""

import json
import urllib.request

import numpy as np

from tests.conftest import need_papi_counting
from tests.web.test_pages import mpi_seconds, served, shot, texts  # noqa: F401 (fixtures; browser is conftest.py's)


def test_timeline_and_counters_side_by_side(browser, served, real_runs):  # noqa: F811
    from selenium.webdriver.common.by import By

    run_id = real_runs["clean"][1]
    browser.get(f"{served}/runs/{run_id}")
    timeline = browser.find_element(By.CSS_SELECTOR, "#call-timeline svg")
    shown = texts(timeline)
    procs = json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/procs").read())
    for p in procs:  # a track per rank x copy, named with its role
        assert f"rank {p['app_rank']} copy {p['copy']} ({p['role']})" in shown
    assert "time since the run's first process started (s)" in shown
    assert "MPI_Sendrecv" in shown and "MPI_Allreduce" in shown
    assert any(t.startswith("MPI calls of every copy of every rank, from the end of MPI_Init") for t in shown)
    # time in MPI per copy keeps its digits (it was rounded to whole seconds)
    values = texts(browser.find_element(By.CSS_SELECTOR, "#mpi-time-chart svg"))
    for t in mpi_seconds(real_runs["clean"][0]).values():
        assert f"{t:,.4g} s" in values
    need_papi_counting()
    # counters: PAPI's nanosecond task clock in ms, per copy that counted it; uncounted events said, not drawn as 0
    stored = {(m["app_rank"], m["copy"], m["name"]): m["value"]
              for m in json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/metrics").read())}
    plots = [texts(p) for p in browser.find_elements(By.CSS_SELECTOR, "div.counter-plot svg")]
    ms = next(t for t in plots if "counters in ms, side by side per copy" in t)
    for rank in (0, 1):
        for copy in (0, 1):
            assert f"{stored[rank, copy, 'papi perf::TASK-CLOCK'] / 1e6:,.3f} ms" in ms
    assert "total per process (ms)" in ms
    count = next(t for t in plots if "counters in count, side by side per copy" in t)
    assert "rank 0 perf::PAGE-FAULTS" in count and count.count("copy 1: not counted") == 2
    assert f"{stored[0, 0, 'papi perf::PAGE-FAULTS']:,.0f}" in count
    shot(browser, "run-page-plots")


def test_timeline_marks_where_copies_were_corrected(browser, served, real_runs):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/runs/{real_runs['voted'][1]}")
    shown = texts(browser.find_element(By.CSS_SELECTOR, "#call-timeline svg"))
    assert "corrected" in shown  # the marker's legend: rank 1 copy 2 was outvoted at its 20th call
    assert any(t.startswith("rank 1 copy 2") for t in shown)


def test_rank_page_marks_the_corrected_copy_at_its_call(browser, served, real_runs):  # noqa: F811
    """The voted run's rank 1: copy 2 (its bit flipped at call 20) was corrected; the rank page's divergence chart
    puts it on copy 2's row at the call the store has."""
    from selenium.webdriver.common.by import By

    run_id = real_runs["voted"][1]
    events = json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/events").read())
    corrected = [e for e in events if e["kind"] == "corrected" and e["app_rank"] == 1]
    assert [e["copy"] for e in corrected] == [2], events
    browser.get(f"{served}/runs/{run_id}/ranks/1")
    chart = browser.find_element(By.CSS_SELECTOR, "#divergence-chart svg")
    shown = texts(chart)
    assert "corrected" in shown and "MPI call number of the copy" in shown
    assert f"#{corrected[0]['call_seq']}" in shown
    assert [t.text for t in chart.find_elements(By.CSS_SELECTOR, "g[id^='ytick_'] text")] == \
        ["copy 0", "copy 1", "copy 2"]
    shot(browser, "rank-page-divergence")


def test_rank_page_does_not_repeat_identical_calls(browser, served, real_runs):  # noqa: F811
    """Copies make the same calls by construction: the page says so in a line instead of bars that repeat."""
    from selenium.webdriver.common.by import By

    run_id = real_runs["clean"][1]
    procs = json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/procs").read())
    calls = {p["calls"] for p in procs if p["app_rank"] == 0}
    assert len(calls) == 1
    browser.get(f"{served}/runs/{run_id}/ranks/0")
    assert browser.find_element(By.ID, "same-calls").text.startswith(f"Every copy made the same {calls.pop()} calls")
    assert not browser.find_elements(By.XPATH, "//h2[text()='Calls per function']")
    assert not browser.find_elements(By.XPATH, "//h2[text()='Divergence timeline']")  # nothing diverged


def test_rank_page_compares_the_calls_of_a_killed_replica(browser, programs, tmp_path):
    """SDR with rank 1's replica 1 killed at its 40th call: the copies' calls differ, so the rank page draws them
    per function, each bar labelled with the count in the copy's record file; a function the killed replica never
    reached is said (no calls), not drawn as 0."""
    from selenium.webdriver.common.by import By

    from echo.runformat.records import read_run
    from tests.conftest import echorun, server_with

    r = echorun(["--no-store", "-n", "2", "--mode", "sdr", "--inject", "kill:rank=1,replica=1,call=40",
                 *programs["sdr_stencil"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    counted = {f.copy: dict(zip(*np.unique(f.function_names(), return_counts=True), strict=True))
               for f in read_run(tmp_path / "run") if f.app_rank == 1}
    assert set(counted) == {0, 1} and sum(counted[1].values()) < sum(counted[0].values())
    with server_with(tmp_path / "served", [(tmp_path / "run", run_id)]) as (url, _):
        browser.get(f"{url}/runs/{run_id}/ranks/1")
        chart = browser.find_element(By.CSS_SELECTOR, "#calls-chart svg")
        functions = [t.get_attribute("textContent").strip()
                     for t in chart.find_elements(By.CSS_SELECTOR, "g[id^='ytick_'] text")]
        assert functions == sorted(counted[0])
        for i, fn in enumerate(functions):
            for copy in (0, 1):
                label = chart.find_element(By.ID, f"calls-{i}-{copy}").get_attribute("textContent").strip()
                n = counted[copy].get(fn)
                assert label == (f"{n:,}" if n else f"copy {copy}: no calls"), (fn, copy)
        assert "calls, log scale" in texts(chart)  # 1 MPI_Init beside 120 MPI_Send
        shot(browser, "rank-page-calls")
