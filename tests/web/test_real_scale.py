"""The pages of a real run of 128 ranks x 2 copies (256 processes under echorun, oversubscribed on this machine), read
in a real headless Chromium from a real `mpiecho serve` it was uploaded to: the diverged rank named at the top, its
heatmap cells marked and no other, the table of ranks paged with its counts, the rank page comparing its copies from
their record files, and the exact history (a program whose name holds this one's is not in it). One job of minutes
on a loaded host: one module-scoped fixture, read by one test."""

import json
import urllib.request

import numpy as np
import pytest

from echo.runformat.records import read_run
from tests.conftest import compile_programs, echorun, follow, server_with
from tests.web.test_rank_page import STARTUP, check_compared, check_functions
from tests.web.test_scale import cell, texts

NRANKS, FLIPPED = 128, 69  # the flipped copy's rank: on the second page of the table of ranks


@pytest.fixture(scope="module")
def real128(mpi, tmp_path_factory):
    """sdc_loop at 128 ranks x 2 copies with one bit of rank 69 copy 1's 20th call flipped (--sdc detect), and the
    same program as `sdc_loop_more` at 2 ranks, both uploaded to one served store; yields (URL, run dir, run id)."""
    base = tmp_path_factory.mktemp("real128")
    exe = compile_programs(mpi, base, None, ["sdc_loop"])["sdc_loop"]
    more = base / "sdc_loop_more"
    more.hardlink_to(exe[0])
    big = echorun(["--no-store", "--max-per-core", "0", "-n", str(NRANKS), "--clones", "2", "--sdc", "detect",
                   "--inject", f"bitflip:rank={FLIPPED},copy=1,call=20", *exe], base / "big", timeout=1800)
    small = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", str(more)], base / "more")
    assert big.returncode == 20 and small.returncode == 0, big.stderr[-3000:] + small.stderr[-3000:]
    runs = [(base / name, json.loads((base / name / "run.json").read_text())["run_id"]) for name in ("big", "more")]
    with server_with(base / "served", runs) as (url, _):
        yield url, *runs[0]


def test_pages_of_a_real_128_rank_run(browser, real128):
    from selenium.webdriver.common.by import By

    url, run_dir, run_id = real128
    html = urllib.request.urlopen(f"{url}/runs/{run_id}").read()
    assert len(html) <= 300_000, len(html)  # the goal for a 128-rank run page
    browser.get(f"{url}/runs/{run_id}")
    # what differs first: the one diverged copy, named above everything else, one row counting its divergences
    assert browser.find_element(By.ID, "summary-diverged").text == f"Diverged: rank {FLIPPED} copy 1."
    rows = browser.find_elements(By.CSS_SELECTOR, "#divergent tr[data-rank]")
    assert [r.text.split()[:5] for r in rows] == [[str(FLIPPED), "1", "20", "1", "0"]]
    # the heatmaps: the flipped copy's cell marked diverged, no other cell marked, its title the copy's real calls
    files = {(f.app_rank, f.copy): f for f in read_run(run_dir)}
    assert len(files) == 2 * NRANKS
    for gid in ("heatmap-mpi", "heatmap-calls"):
        assert "diverged" in cell(browser, gid, FLIPPED, 1).get_attribute("class").split()
        assert len(browser.find_elements(By.CSS_SELECTOR, f"#{gid} rect.cell.diverged, #{gid} rect.cell.died")) == 1
    title = cell(browser, "heatmap-calls", FLIPPED, 1).find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert title.startswith(f"rank {FLIPPED}, copy 1: {len(files[FLIPPED, 1].records)} calls"), title
    # the table of ranks in pages of 64: the flipped copy's cell on the second
    assert browser.find_element(By.ID, "ranks-pager").text.startswith(f"Ranks 0 to 63 of {NRANKS} (page 1 of 2).")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#ranks-pager a[rel=next]"))
    assert browser.find_element(By.ID, "ranks-pager").text.startswith(f"Ranks 64 to 127 of {NRANKS} (page 2 of 2).")
    ranks = {int(c.get_attribute("data-rank")) for c in browser.find_elements(By.CSS_SELECTOR, "#matrix td[data-rank]")}
    assert ranks == set(range(64, NRANKS))
    bad = browser.find_element(By.CSS_SELECTOR, f'#matrix td[data-rank="{FLIPPED}"][data-copy="1"]')
    assert "cell-bad" in bad.get_attribute("class") and "diverged at call #20" in bad.text
    # its rank page: the copies side by side, each value as the copy's record file has it
    browser.get(f"{url}/runs/{run_id}")
    follow(browser, browser.find_element(By.CSS_SELECTOR, f'#divergent tr[data-rank="{FLIPPED}"] a'))
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith(f"Rank {FLIPPED} of run {run_id}")
    mine = {copy: files[FLIPPED, copy] for copy in (0, 1)}
    in_mpi = {k: float(f.durations()[~np.isin(f.function_names(), STARTUP)].sum())
              for k, f in mine.items()}
    check_compared(browser.find_element(By.CSS_SELECTOR, '#copies tr[data-row="time in MPI calls"]'), in_mpi, 1e-4)
    check_functions(browser, mine)
    # the program's history: this run only, not sdc_loop_more's, whose name holds this program's
    browser.get(f"{url}/runs/{run_id}")
    follow(browser, browser.find_element(By.LINK_TEXT, "History of sdc_loop"))
    sections = browser.find_elements(By.CSS_SELECTOR, "section.series")
    assert sum(int(s.get_attribute("data-runs")) for s in sections) == 1
    assert [r.get_attribute("data-run") for s in sections
            for r in s.find_elements(By.CSS_SELECTOR, "table.history tr[data-run]")] == [run_id]
    browser.get(url)
    assert browser.find_element(By.ID, "runs-count").text.startswith("Runs 1 to 2 of 2.")
    assert sorted(texts(browser, "#runs td:nth-child(2)")) == ["sdc_loop", "sdc_loop_more"]


def test_timeline_of_a_real_128_rank_run(browser, real128):
    """Every rank binned (two a row), the flipped copy's divergence marked in its row; a row's label leads to its
    ranks' calls; a window of time zooms in: the divergence is drawn inside the window around its call, not in one
    just after it."""
    from selenium.webdriver.common.by import By

    url, run_dir, run_id = real128
    browser.get(f"{url}/runs/{run_id}")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#timeline-form button"))
    overview = browser.find_element(By.ID, "binned-timeline")
    labels = [t.get_attribute("textContent") for t in overview.find_elements(By.CSS_SELECTOR, "svg text")]
    assert [t for t in labels if t.startswith("ranks ")] == [f"ranks {a}-{a + 1}" for a in range(0, NRANKS, 2)]
    assert "divergence" in labels
    files = read_run(run_dir)
    origin = min(f.start_time for f in files)
    flipped = next(f for f in files if (f.app_rank, f.copy) == (FLIPPED, 1))
    at = flipped.start_time + float(flipped.seconds("t_start")[20]) - origin  # its call 20, on the run's time axis
    ends = max(f.start_time + float(f.seconds("t_end")[-1]) for f in files) - origin
    title = next(t for t in labels if t.startswith(f"all {NRANKS} ranks, 2 a row"))
    assert title.endswith(f"to {ends:.3f} s"), (title, ends)
    row = f"ranks {FLIPPED - FLIPPED % 2}-{FLIPPED - FLIPPED % 2 + 1}"
    follow(browser, next(a for a in overview.find_elements(By.CSS_SELECTOR, "svg a")
                         if a.get_attribute("textContent").strip() == row))
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith(f"Timeline of ranks {row[6:].replace('-', ' to ')}")
    for start, end, marked in ((at - 0.05, at + 0.05, True), (at + 0.001, at + 0.1, False)):
        browser.get(f"{url}/runs/{run_id}/timeline?first={FLIPPED}&last={FLIPPED}&start={start}&end={end}")
        chart = [t.get_attribute("textContent") for t in browser.find_elements(By.CSS_SELECTOR,
                                                                               "#call-timeline svg text")]
        assert f"MPI calls of every copy of every rank, from {start:.3f} s to {end:.3f} s" in chart, chart
        assert ("divergence" in chart) == marked, (start, end, chart)
        assert f"rank {FLIPPED} copy 1 (copy)" in chart
