"""The web reports in a real headless Chromium (Debian's, driven by Selenium), served by a real uvicorn on
loopback. Screenshots go to test-artifacts/."""

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from echo.server.plots import STARTUP
from echo.store.db import open_store
from tests.conftest import follow, need_papi_counting, server_with

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TOKENS: dict[str, str] = {}  # the upload token of each served URL


@pytest.fixture(scope="module")
def served(real_runs, tmp_path_factory):
    """`mpiecho serve` on a free loopback port with both real runs uploaded over HTTP."""
    runs = [real_runs[name] for name in ("clean", "voted", "slowed", "excluded")]
    with server_with(tmp_path_factory.mktemp("served"), runs) as (url, token):
        TOKENS[url] = token
        yield url


def shot(browser, name):
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def test_run_page_matrix_and_chart(browser, served, real_runs):
    from selenium.webdriver.common.by import By

    run_id = real_runs["voted"][1]
    browser.get(f"{served}/runs/{run_id}")
    assert browser.find_element(By.ID, "verdict").text.startswith("Copies diverged")
    cells = browser.find_elements(By.CSS_SELECTOR, "#matrix td[data-rank]")
    assert len(cells) == 6
    fixed = browser.find_element(By.CSS_SELECTOR, '#matrix td[data-rank="1"][data-copy="2"]')
    assert "cell-fixed" in fixed.get_attribute("class") and "corrected" in fixed.text
    assert "cell-ok" in browser.find_element(By.CSS_SELECTOR, '#matrix td[data-rank="0"][data-copy="1"]') \
        .get_attribute("class")
    first_event = browser.find_element(By.CSS_SELECTOR, "#events tr:nth-child(2)").text
    assert first_event.startswith("corrected 1 2")
    # time in MPI: a bar per copy, grouped by rank, each labelled with its seconds in MPI calls after MPI_Init
    # and before MPI_Finalize, as its record file has them
    chart = texts(browser.find_element(By.CSS_SELECTOR, "#mpi-time-chart svg"))
    times = mpi_seconds(real_runs["voted"][0])
    assert len(times) == 6 and all(t > 0 for t in times.values())
    for t in times.values():
        assert f"{t:,.4g} s" in chart
    assert {"rank 0", "rank 1", "copy 0", "copy 1", "copy 2"} <= set(chart)
    assert any(t.startswith("time inside MPI calls (s)") for t in chart)
    shot(browser, "run-page")


def test_slow_copy_timeline(browser, served, real_runs):
    """DGRP's per-process view: the slowed copy turns red at about its 10th call and stays so; its host is listed."""
    from selenium.webdriver.common.by import By

    from tests.conftest import skip_if_busy

    skip_if_busy(real_runs["slowed"][0])
    browser.get(f"{served}/runs/{real_runs['slowed'][1]}")
    changes = status_changes(browser.find_element(By.CSS_SELECTOR, "#slowness-chart svg"), "slowness")
    assert set(changes) == {"rank 0 copy 1"}, changes  # only the slowed copy ever left "recommended"
    (call, status), *_ = changes["rank 0 copy 1"]
    assert status == "non-recommended" and 10 <= call <= 14, changes
    assert "a process was slow" in browser.find_element(By.CSS_SELECTOR, "ul.hosts").text
    shot(browser, "slow-copy")


def test_the_documents_a_run_page_names_open(browser, served, real_runs):
    """The run page says where its charts are explained (docs/perf.md, docs/sdr.md): each a link to the document
    the server has from the installed package."""
    from selenium.webdriver.common.by import By

    for run, doc, first in (("slowed", "perf", "# Slow processes and hosts"), ("excluded", "sdr", "# SDR mode")):
        browser.get(f"{served}/runs/{real_runs[run][1]}")
        follow(browser, browser.find_element(By.LINK_TEXT, f"docs/{doc}.md"))
        assert browser.find_element(By.TAG_NAME, "body").text.startswith(first), browser.current_url


def test_excluded_replica_timeline(browser, served, real_runs):
    """SDR: the slowed replica's bar turns red where it was excluded (about its 32nd call: two slow rounds of 16
    communication calls) and stays red to its end (stopped); every replica starts green."""
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/runs/{real_runs['excluded'][1]}")
    chart = browser.find_element(By.CSS_SELECTOR, "#exclusions-chart svg")
    assert {"rank 0 replica 0", "rank 0 replica 1", "rank 1 replica 0", "rank 1 replica 1"} <= set(texts(chart))
    assert "MPI call number of the process" in texts(chart)
    slowed = status_changes(chart, "exclusions")["rank 0 replica 1"]  # (noise on shared cores may exclude others)
    assert [s for _, s in slowed] == ["excluded as slow", "stopped at the end, still excluded"]
    assert 32 <= slowed[0][0] <= 40
    procs = json.loads(urllib.request.urlopen(f"{served}/api/runs/{real_runs['excluded'][1]}/procs").read())
    assert slowed[1][0] == next(p["calls"] for p in procs if (p["app_rank"], p["copy"]) == (0, 1))
    shot(browser, "excluded-replica")


def test_copies_side_by_side_with_counters(browser, served, real_runs):
    """The rank page's counters: a row per event and scope, a cell per copy (tests/web/test_rank_page.py checks
    every value against the processes' files)."""
    from selenium.webdriver.common.by import By

    need_papi_counting()
    run_id = real_runs["clean"][1]
    browser.get(f"{served}/runs/{run_id}/ranks/0")
    rows = {r.get_attribute("data-event"): r for r in
            browser.find_elements(By.CSS_SELECTOR, '#counters tr[data-scope="whole process"]')}
    assert set(rows) == {"perf::CONTEXT-SWITCHES", "perf::PAGE-FAULTS", "perf::TASK-CLOCK"}
    tc = [td.find_element(By.CSS_SELECTOR, ".v").text for td in rows["perf::TASK-CLOCK"].find_elements(
        By.CSS_SELECTOR, "td[data-copy]")]
    assert len(tc) == 2 and all(v != "not counted" and not v.startswith("0 ") for v in tc), tc  # both counted it
    page_faults = rows["perf::PAGE-FAULTS"].find_element(By.CSS_SELECTOR, 'td[data-copy="1"]').text
    assert page_faults == "not counted", "copy 1 did not count it"
    shot(browser, "rank-page")


def test_runs_list_filters_and_history(browser, served, real_runs):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/?diverged=true")
    ids = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#runs td:first-child a")]
    assert ids == [real_runs["voted"][1]]
    browser.get(f"{served}/programs/sdc_loop")
    # two configurations (2 copies with PAPI sets; 3 voting copies): two series of one run each
    sections = browser.find_elements(By.CSS_SELECTOR, "section.series")
    assert [len(s.find_elements(By.CSS_SELECTOR, "table.history tr[data-run]")) for s in sections] == [1, 1]
    voted = sections[0]  # the newest first
    assert voted.find_element(By.CSS_SELECTOR, "tr[data-run]").get_attribute("data-run") == real_runs["voted"][1]
    assert [g.get_attribute("id") for g in browser.find_elements(By.CSS_SELECTOR, "svg g[id^='series-']")] == \
        ["series-0-injection", "series-1-agreed"], "the flipped bit's run is marked"
    assert "diverge since" not in browser.find_element(By.TAG_NAME, "body").text, "an injection starts no divergence"
    shot(browser, "history-page")


def mpi_seconds(run_dir: Path) -> dict[tuple[int, int], float]:
    """Seconds each copy spent in MPI calls other than MPI_Init and MPI_Finalize, from its record file."""
    from echo.runformat.records import read_run

    return {(f.app_rank, f.copy): float(f.durations()[~np.isin(f.function_names(), STARTUP)].sum())
            for f in read_run(run_dir)}


def texts(element) -> list[str]:
    """The text of an SVG chart (matplotlib writes its text as text): titles, ticks, labels, legend."""
    from selenium.webdriver.common.by import By

    return [t.get_attribute("textContent").strip() for t in element.find_elements(By.TAG_NAME, "text")]


def status_changes(chart, gid: str) -> dict[str, list[tuple[int, str]]]:
    """A status timeline's changes per process: {row label: [(call, status), ...]}, read from the text of each
    change (`call N: status`, group `{gid}-{row}-{change}`) and the row labels (the y ticks, top down)."""
    from selenium.webdriver.common.by import By

    rows = [t.get_attribute("textContent").strip()
            for t in chart.find_elements(By.CSS_SELECTOR, "g[id^='ytick_'] text")]
    out: dict[str, list[tuple[int, str]]] = {}
    for g in chart.find_elements(By.CSS_SELECTOR, f"g[id^='{gid}-']"):
        call, status = g.get_attribute("textContent").strip().removeprefix("call ").split(": ", 1)
        out.setdefault(rows[int(g.get_attribute("id").split("-")[1])], []).append((int(call), status))
    return out


def cells(row) -> list[str]:
    from selenium.webdriver.common.by import By

    return [td.text for td in row.find_elements(By.TAG_NAME, "td")]


def test_run_pages_tell_mode_roles_units_and_the_counting_copy(browser, served, real_runs):
    """The merged counter table shows, per event, the copy that counted it, PAPI's unit and the stored total."""
    import os

    from selenium.webdriver.common.by import By

    run_id = real_runs["clean"][1]
    browser.get(f"{served}/runs/{run_id}")
    assert browser.find_element(By.ID, "mode").text == "clones"
    judged = browser.find_elements(By.CSS_SELECTOR, "#not-judged li")
    if (os.cpu_count() or 1) < 4:  # 4 processes: more than this machine's cores, so none was judged
        assert len(judged) == 1 and f"4 processes shared {os.cpu_count()} cores" in judged[0].text
        assert not browser.find_elements(By.ID, "slowness-chart")
    need_papi_counting()
    assert browser.find_element(By.ID, "roles").text == "papi-set-0 x2, papi-set-1 x2"
    stored = {(m["app_rank"], m["copy"], m["name"]): (m["value"], m["unit"])
              for m in json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/metrics").read())}
    for rank in (0, 1):
        rows = browser.find_elements(By.CSS_SELECTOR, f'table.counters[data-rank="{rank}"] tr')[1:]
        shown = {c[0]: c[1:] for c in map(cells, rows)}
        assert {ev: v[:2] for ev, v in shown.items()} == {"perf::CONTEXT-SWITCHES": ["1", "count"],
                                                          "perf::PAGE-FAULTS": ["0", "count"],
                                                          "perf::TASK-CLOCK": ["0", "ns"]}
        for ev, (copy, unit, total, _compute, _mpi) in shown.items():
            value, stored_unit = stored[rank, int(copy), f"papi {ev}"]
            assert (total, unit) == (f"{value:.0f}", stored_unit), ev
        assert float(shown["perf::TASK-CLOCK"][2]) > 0, "the task clock advanced"
    shot(browser, "counters")


def test_run_pages_tell_injections_and_sdr(browser, served, real_runs):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/runs/{real_runs['voted'][1]}")
    rows = [cells(r) for r in browser.find_elements(By.CSS_SELECTOR, "#injections tr")[1:]]
    assert [r[:2] for r in rows] == [["bitflip:rank=1,copy=2,call=20,byte=0,bit=0", "yes"]]
    assert rows[0][2].startswith("fired at call ") and "flipped bit 0 of byte 0" in rows[0][2]
    browser.get(f"{served}/runs/{real_runs['excluded'][1]}")
    assert browser.find_element(By.ID, "mode").text == "sdr"
    assert browser.find_element(By.ID, "roles").text == "replica x4"
    rows = [cells(r) for r in browser.find_elements(By.CSS_SELECTOR, "#injections tr")[1:]]
    assert [r[:2] for r in rows] == [["slow:rank=0,copy=1,factor=8,from=1", "yes"]]


def test_runs_list_shows_modes_and_filters_by_them(browser, served, real_runs):
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/?mode=sdr")
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tr")[1:]
    assert [r.find_element(By.CSS_SELECTOR, "td:first-child a").text for r in rows] == [real_runs["excluded"][1]]
    assert rows[0].find_element(By.CSS_SELECTOR, "td.mode").text == "sdr"
    assert rows[0].find_element(By.CSS_SELECTOR, "td.injections").text == "1 of 1 fired"
    browser.get(f"{served}/?mode=clones")
    shown = {r.find_element(By.CSS_SELECTOR, "td:first-child a").text: r.find_element(By.CSS_SELECTOR, "td.mode").text
             for r in browser.find_elements(By.CSS_SELECTOR, "#runs tr")[1:]}
    assert {real_runs[k][1] for k in ("clean", "voted", "slowed")} <= set(shown) and set(shown.values()) == {"clones"}


def test_a_perturbed_run_is_not_said_to_agree(browser, programs, tmp_path):
    """Copies perturbed on purpose differ by design: the page says so (not "Copies agree" in green), and a printed
    value lock-step could not measure (the sum copy 0 received from MPI_Allreduce) is given no digits."""
    from selenium.webdriver.common.by import By

    from echo.collectors.perturb.sensitivity import NUMBER
    from tests.conftest import echorun

    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "1", "--clones", "3", "--perturb", "noise:ulp=4,seed=7", *programs["sdc_loop"]],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run.html"
    subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "report", "--db", db, "--html", str(out)],
                   check=True, capture_output=True)
    browser.get(out.as_uri())
    verdict = browser.find_element(By.ID, "verdict")
    assert verdict.get_attribute("class") == "warn"
    assert verdict.text.startswith("Copies were perturbed on purpose (noise:ulp=4,seed=7 (lockstep))")
    assert browser.find_element(By.ID, "perturbation").text == "noise:ulp=4,seed=7 (lockstep)"
    printed_sum = NUMBER.findall((tmp_path / "run" / "output" / "rank0.copy0.out").read_text())[0]
    results = [c[2] for c in map(cells, browser.find_elements(By.CSS_SELECTOR, "#metrics tr")[1:])]
    assert "digits fewest" in results and not any(f"({printed_sum})" in name for name in results)
    sensitivity = next(c[4] for c in map(cells, browser.find_elements(By.CSS_SELECTOR, "#events tr")[1:])
                       if c[0] == "sensitivity")
    assert "printed values not measured (in lock-step every copy takes what copy 0 received" in sensitivity
    # the digits chart: calls on a numeric axis, the rank's fewest digits as the store has them
    from sqlalchemy.orm import Session

    from echo.server import crud

    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    with Session(open_store(db, create=False)) as s:
        fewest = crud.metrics(s, run_id=run_id, prefix="digits fewest")
        calls = [int(m.name.split("#")[1].split()[0]) for m in crud.metrics(s, run_id=run_id, prefix="digits at call")]
    assert len(fewest) == 1 and calls
    chart = texts(browser.find_element(By.CSS_SELECTOR, "#digits-chart svg"))
    assert f"rank 0: fewest {fewest[0].value:.1f} digits" in chart
    assert "MPI call number of the rank" in chart and "significant digits the copies agree on" in chart
    shot(browser, "perturbed")


def test_static_html_report(browser, real_runs, tmp_path):
    from selenium.webdriver.common.by import By

    db = f"sqlite:///{tmp_path / 'echo.db'}"
    from echo.store.ingest import ingest

    ingest(real_runs["voted"][0], open_store(db))
    out = tmp_path / "run.html"
    r = subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "report", "--db", db, "--html", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "<style>" in out.read_text() and "static/echo.css" not in out.read_text(), "one self-contained file"
    browser.get(out.as_uri())
    assert len(browser.find_elements(By.CSS_SELECTOR, "#matrix td[data-rank]")) == 6
    assert browser.find_element(By.ID, "mode").text == "clones"
    assert browser.find_element(By.ID, "roles").text == "representative x2, copy x4"
    # the merged counters of the static page: each event's counting copy (a number, not a method's repr) and unit
    need_papi_counting()
    ingest(real_runs["clean"][0], open_store(db))
    r = subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "report", real_runs["clean"][1], "--db", db,
                        "--html", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "built-in method" not in out.read_text()
    browser.get(out.as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, 'table.counters[data-rank="0"] tr')[1:]
    assert {c[0]: c[1:3] for c in map(cells, rows)} == {"perf::CONTEXT-SWITCHES": ["1", "count"],
                                                        "perf::PAGE-FAULTS": ["0", "count"],
                                                        "perf::TASK-CLOCK": ["0", "ns"]}


def test_echorun_uploads_to_the_server(served, programs, tmp_path):

    from tests.conftest import echorun

    r = echorun(["--no-store", "--server", served, "--token", TOKENS[served], "-n", "2", "--clones", "2",
                 *programs["coll"]], tmp_path / "run")
    assert r.returncode == 0 and "uploaded run" in r.stderr, r.stderr
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    procs = json.loads(urllib.request.urlopen(f"{served}/api/runs/{run_id}/procs").read())
    assert len(procs) == 4 and all(p["state"] == "finalized" for p in procs)

