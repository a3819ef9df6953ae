"""A rank's page compares its copies, read in a real headless Chromium from a real `mpiecho serve` holding real runs:
each copy's time in MPI and compute between calls, its time per MPI function and its PAPI counts, side by side, every
number checked against what the processes wrote (their record and metrics files), the copy that differs from the
others highlighted, "not counted" where a copy's set did not count an event."""

import json
import re
import statistics
from pathlib import Path

import numpy as np
import pytest

from echo.runformat.records import read_run
from echo.runformat.runfiles import metrics_file
from tests.conftest import PAPI_SETS, echorun, papi_cannot_count, server_with

# the two sets of tests/conftest.py, the first asking for cycles too: no VM without a PMU counts them (the planner
# leaves them out and says why), a machine with one does
SETS = "PAPI_TOT_CYC," + PAPI_SETS

STARTUP = ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")  # left out of a copy's time in MPI, as on the run page
UNITS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


@pytest.fixture(scope="module")
def ranked(programs, tmp_path_factory):
    """A 1-D heat solver with rank 0 in 8 copies and rank 1 in 2, the first two copies counting PAPI sets where PAPI
    counts here; and coll.c (every blocking collective: more MPI functions than the page lists unfolded) in 2 copies;
    both uploaded to a served store. Yields (URL, {name: (run dir, run id)})."""
    base = tmp_path_factory.mktemp("ranked")
    papi = [] if papi_cannot_count() else ["--papi-sets", SETS]
    heat = echorun(["--no-store", "-n", "2", "--clones", "0=8,1=2", *papi, *programs["heat_steps"], "20"],
                   base / "heat")
    coll = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["coll"]], base / "coll")
    assert heat.returncode == 0 and coll.returncode == 0, heat.stderr + coll.stderr
    runs = {name: (base / name, (base / name / "run.json").read_text().split('"run_id": "')[1].split('"')[0])
            for name in ("heat", "coll")}
    with server_with(base / "served", list(runs.values())) as (url, _):
        yield url, runs


def records_of(run_dir: Path, rank: int) -> dict[int, object]:
    """The record files of a rank's copies, by copy."""
    return {f.copy: f for f in read_run(run_dir) if f.app_rank == rank}


def shown_seconds(text: str) -> float:
    assert re.fullmatch(r"([\d,.]+) (s|ms|µs)", text), text
    number, unit = re.fullmatch(r"([\d,.]+) (s|ms|µs)", text).groups()
    return float(number.replace(",", "")) * UNITS[unit]


def close(shown: float, expected: float) -> bool:
    """Equal to 4 significant digits (what the page writes)."""
    return abs(shown - expected) <= 6e-4 * abs(expected) + 1e-12


def text_of(td, css: str) -> str:
    """The text of an element, shown or folded (Selenium's .text is empty for a folded row)."""
    from selenium.webdriver.common.by import By

    return td.find_element(By.CSS_SELECTOR, css).get_attribute("textContent")


def cells(row) -> dict[int, object]:
    from selenium.webdriver.common.by import By

    return {int(td.get_attribute("data-copy")): td for td in row.find_elements(By.CSS_SELECTOR, "td[data-copy]")}


def check_compared(row, expected: dict[int, float], noise: float) -> None:
    """Each copy's cell of a row shows its expected seconds, its difference to the median of the other copies (as
    "+35%") and is highlighted exactly where it is 1.5x or 1/1.5 of that median and more than `noise` from it."""

    shown = cells(row)
    assert set(shown) == set(expected)
    for copy, td in shown.items():
        v = expected[copy]
        assert close(shown_seconds(text_of(td, ".v")), v), (copy, td.text, v)
        mid = statistics.median(w for k, w in expected.items() if k != copy)
        pct = float(text_of(td, ".vs").rstrip("%").replace(",", ""))
        assert abs(pct - (v / mid - 1) * 100) <= 1, (copy, td.text, v, mid)
        ratio = v / mid
        if min(abs(ratio - 1.5), abs(ratio - 1 / 1.5)) > 0.01:  # not at the threshold itself
            far = (ratio >= 1.5 or ratio <= 1 / 1.5) and abs(v - mid) > noise
            assert ("far" in td.get_attribute("class").split()) == far, (copy, td.text, v, mid)


def check_functions(browser, files: dict[int, object]) -> list[str]:
    """The table of time per MPI function shows every function the copies called, once, with its calls and each
    copy's seconds in it as its record file has them; returns the functions in the order listed."""
    from selenium.webdriver.common.by import By

    per: dict[str, dict[int, float]] = {}
    calls: dict[str, set[int]] = {}
    for copy, f in files.items():
        names, durations = f.function_names(), f.durations()
        for name in np.unique(names):
            per.setdefault(str(name), {})[copy] = float(durations[names == name].sum())
            calls.setdefault(str(name), set()).add(int((names == name).sum()))
    rows = browser.find_elements(By.CSS_SELECTOR, "#functions tr[data-function]")
    listed = [r.get_attribute("data-function") for r in rows]
    assert sorted(listed) == sorted(per)
    for row in rows:
        name = row.get_attribute("data-function")
        (n,) = calls[name]  # copies make the same calls
        assert row.find_elements(By.TAG_NAME, "td")[1].get_attribute("textContent") == \
            f"{n:,} call{'s' if n != 1 else ''}"
        check_compared(row, per[name], 1e-4)
    return listed


def test_rank_page_sets_eight_copies_side_by_side(browser, ranked):
    from selenium.webdriver.common.by import By

    url, runs = ranked
    run_dir, run_id = runs["heat"]
    files = records_of(run_dir, 0)
    assert sorted(files) == list(range(8))
    browser.get(f"{url}/runs/{run_id}/ranks/0")
    # each copy's time in MPI (MPI_Init and MPI_Finalize left out) and its compute between its first and last call
    in_mpi = {k: float(f.durations()[~np.isin(f.function_names(), STARTUP)].sum()) for k, f in files.items()}
    compute = {k: float((f.records["t_end"][-1] - f.records["t_start"][0]) * f.seconds_per_tick
                        - f.durations().sum()) for k, f in files.items()}
    check_compared(browser.find_element(By.CSS_SELECTOR, '#copies tr[data-row="time in MPI calls"]'), in_mpi, 1e-4)
    check_compared(browser.find_element(By.CSS_SELECTOR, '#copies tr[data-row="compute between calls"]'), compute,
                   1e-4)
    listed = check_functions(browser, files)
    startup = [f for f in listed if f in STARTUP]  # the library starting and stopping go last, whatever they took
    assert startup and listed[-len(startup):] == startup
    # 8 copies side by side fit the window: no sideways scrolling
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


def test_rank_page_counters_side_by_side_with_units(browser, ranked):
    """Where PAPI counts here (software events in a VM without a PMU), each copy's counts in their units; "not
    counted", never a 0, for the copies whose set did not count an event (copies 2 to 7 count none), and for every
    copy where PAPI could not count an event asked for (cycles in a VM without a PMU), with PAPI's reason."""
    from selenium.webdriver.common.by import By

    if (why := papi_cannot_count()) is not None:
        pytest.skip(f"PAPI counts no event on this machine: {why}")
    url, runs = ranked
    run_dir, run_id = runs["heat"]
    files = records_of(run_dir, 0)
    counted: dict[tuple[str, str], dict[int, float]] = {}
    units = {}
    for copy, f in files.items():
        path = metrics_file(run_dir, f.real_rank)  # a copy without a counter set writes none
        for line in path.read_text().splitlines() if path.is_file() else []:
            name, value, unit = line.split("\t")
            if name.startswith("papi ") and name != "papi read":
                counted.setdefault((name[5:], "whole process"), {})[copy] = float(value)
                units[name[5:]] = unit
        for j, slot in enumerate(f.slot_names):  # "EV>": the compute phase before each call, "EV@": the call
            scope = "between MPI calls" if slot.endswith(">") else "inside MPI calls"
            counted.setdefault((slot[:-1], scope), {})[copy] = float(f.records["slot"][:, j].sum())
    # what echorun said it could not count here (PAPI_TOT_CYC in a VM without a PMU), with PAPI's reason
    missed = dict(json.loads((run_dir / "run.json").read_text()).get("papi_unavailable", []))
    asked = {ev for s in SETS.split(";") for ev in s.split(",")}
    assert {ev for ev, _ in counted} | set(missed) == asked and not {ev for ev, _ in counted} & set(missed)
    browser.get(f"{url}/runs/{run_id}/ranks/0")
    rows = browser.find_elements(By.CSS_SELECTOR, "#counters tr[data-event]")
    assert {(r.get_attribute("data-event"), r.get_attribute("data-scope")) for r in rows} == \
        set(counted) | {(ev, "not countable here") for ev in missed}
    for row in rows:
        key = (row.get_attribute("data-event"), row.get_attribute("data-scope"))
        if key[0] in missed:  # no copy counted it: said, with PAPI's reason, and no cell holds a number
            assert row.find_elements(By.TAG_NAME, "td")[1].text == f"not countable here: {missed[key[0]]}"
            assert {td.text for td in cells(row).values()} == {"not counted"}
            continue
        unit = units[key[0]]
        for copy, td in cells(row).items():
            text = text_of(td, ".v")
            if copy not in counted[key]:
                assert text == "not counted" and "missing" in td.get_attribute("class"), (key, copy, text)
            elif unit == "ns":  # PAPI's clocks as durations
                assert close(shown_seconds(text), counted[key][copy] / 1e9), (key, copy, text)
            else:
                assert unit == "count" and text == f"{counted[key][copy]:,.0f}", (key, copy, text)
    # the anchor both sets counted, the others by one copy each; copies 2 to 7 counted nothing
    assert set(counted["perf::TASK-CLOCK", "whole process"]) == {0, 1}
    assert len(counted["perf::PAGE-FAULTS", "whole process"]) == len(counted["perf::CONTEXT-SWITCHES",
                                                                             "whole process"]) == 1


def test_rank_page_folds_the_functions_past_the_first(browser, ranked):
    """A program calling many MPI functions: the 20 that took most time are listed, the others folded below them,
    each once, every value as the records have it."""
    from selenium.webdriver.common.by import By

    url, runs = ranked
    run_dir, run_id = runs["coll"]
    browser.get(f"{url}/runs/{run_id}/ranks/1")
    listed = check_functions(browser, records_of(run_dir, 1))
    assert len(listed) > 20
    first = browser.find_elements(By.CSS_SELECTOR, "#functions > table tr[data-function]")
    folded = browser.find_elements(By.CSS_SELECTOR, "#functions details tr[data-function]")
    assert len(first) == 20 and len(folded) == len(listed) - 20
    assert not folded[0].is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "#functions details summary").text == \
        f"{len(listed) - 20} more functions"
    browser.find_element(By.CSS_SELECTOR, "#functions details summary").click()
    assert folded[0].is_displayed()
