"""The history page in a real headless Chromium: a program's runs grouped into series by configuration, and a
deliberate injection kept out of "runs diverge since". Real runs of one program uploaded to a real server:
`seeded 7` (copies agree) clean, with a flipped bit, clean again; `seeded` unseeded, twice (each copy draws
other numbers: a divergence no injection caused)."""

import json
import urllib.request

import pytest

from tests.conftest import echorun, server_with
from tests.web.test_pages import shot


@pytest.fixture(scope="module")
def nights(programs, tmp_path_factory):
    """{name: (run dir, run id)}, run one after the other as nights of a series would be."""
    base = tmp_path_factory.mktemp("nights")
    seeded = programs["seeded"]
    plans = {"clean1": (["--sdc", "detect"], [*seeded, "7"], 0),
             "flipped": (["--sdc", "detect", "--inject", "bitflip:rank=1,copy=1,call=10"], [*seeded, "7"], 20),
             "clean2": (["--sdc", "detect"], [*seeded, "7"], 0),
             "unseeded": (["--sdc", "detect"], seeded, 20),
             "unseeded2": (["--sdc", "detect"], seeded, 20)}
    out = {}
    for name, (opts, program, status) in plans.items():
        r = echorun(["--no-store", "-n", "2", "--clones", "2", *opts, *program], base / name)
        assert r.returncode == status, r.stderr
        out[name] = (base / name, json.loads((base / name / "run.json").read_text())["run_id"])
    return out


@pytest.fixture(scope="module")
def history_server(nights, tmp_path_factory):
    with server_with(tmp_path_factory.mktemp("history"), list(nights.values())) as (url, _token):
        yield url


def api(url: str) -> object:
    return json.loads(urllib.request.urlopen(url).read())


def texts(section) -> list[str]:
    from selenium.webdriver.common.by import By

    return [t.get_attribute("textContent").strip() for t in section.find_elements(By.CSS_SELECTOR, "svg text")]


def point_labels(section) -> list[str]:
    """The times written over the chart's points, left to right."""
    return [t for t in texts(section) if t.endswith(" s") and t[:-2].replace(".", "").isdigit()]


def marks(section) -> list[str]:
    """The chart's points left to right, each by the mark of its group (series-N-agreed/diverged/injection)."""
    from selenium.webdriver.common.by import By

    points = []
    for g in section.find_elements(By.CSS_SELECTOR, "svg g[id^='series-']"):
        mark = g.get_attribute("id").rsplit("-", 1)[1]
        points += [(float(u.get_attribute("x")), mark) for u in g.find_elements(By.TAG_NAME, "use")]
    return [m for _, m in sorted(points)]


def test_history_groups_series_and_keeps_injections_out(browser, history_server, nights):
    from selenium.webdriver.common.by import By

    ids = {name: run_id for name, (_, run_id) in nights.items()}
    browser.get(f"{history_server}/programs/seeded")
    sections = browser.find_elements(By.CSS_SELECTOR, "section.series")
    by_label = {s.find_element(By.TAG_NAME, "h2").text: s for s in sections}
    assert set(by_label) == {"seeded: clones, 2 ranks x 2 copies, roles representative x2, copy x2",
                             "seeded 7: clones, 2 ranks x 2 copies, roles representative x2, copy x2"}
    # newest series first: the unseeded run was the last
    assert sections[0].find_element(By.TAG_NAME, "h2").text.startswith("seeded:")
    unseeded, seeded = sections

    rows = seeded.find_elements(By.CSS_SELECTOR, "table.history tr[data-run]")
    assert [r.get_attribute("data-run") for r in rows] == [ids["clean1"], ids["flipped"], ids["clean2"]]
    cells = {r.get_attribute("data-run"): [td.text for td in r.find_elements(By.TAG_NAME, "td")] for r in rows}
    assert cells[ids["flipped"]][3:5] == ["diverged", "injection run: 1 of 1 fired"]
    assert cells[ids["clean1"]][3:5] == cells[ids["clean2"]][3:5] == ["agree", "-"]
    # the flipped run neither started a divergence nor ended the clean streak that began with the first run
    since = seeded.find_element(By.CSS_SELECTOR, "p.since").text
    assert since.startswith(f"Clean since {ids['clean1']}") and "diverge" not in since
    assert marks(seeded) == ["agreed", "injection", "agreed"]
    # the chart shows the table's times, its axis says the unit
    assert point_labels(seeded) == [r.find_elements(By.TAG_NAME, "td")[5].text for r in rows]
    assert "wall time (s)" in texts(seeded)

    # the unseeded series diverged on its own: its first run is where the divergence starts
    assert unseeded.find_element(By.CSS_SELECTOR, "p.since").text.startswith(f"Runs diverge since {ids['unseeded']}")
    assert marks(unseeded) == ["diverged", "diverged"]
    assert len(unseeded.find_elements(By.CSS_SELECTOR, "table.history tr[data-run]")) == 2
    shot(browser, "history-series")

    # the run pages and the API say the same of each run
    browser.get(f"{history_server}/runs/{ids['unseeded2']}")
    assert f"Runs of this configuration of the program diverge since run {ids['unseeded']}." in \
        browser.find_element(By.TAG_NAME, "body").text
    browser.get(f"{history_server}/runs/{ids['flipped']}")
    assert "diverge since" not in browser.find_element(By.TAG_NAME, "body").text
    div = {n: api(f"{history_server}/api/runs/{ids[n]}/divergences")["diverging_since"] for n in ids}
    assert div == {"clean1": None, "flipped": None, "clean2": None, "unseeded": ids["unseeded"],
                   "unseeded2": ids["unseeded"]}
    assert api(f"{history_server}/api/programs/seeded/series") == [
        {"label": "seeded: clones, 2 ranks x 2 copies, roles representative x2, copy x2",
         "runs": [ids["unseeded"], ids["unseeded2"]], "deliberate": [], "diverging_since": ids["unseeded"],
         "clean_since": None},
        {"label": "seeded 7: clones, 2 ranks x 2 copies, roles representative x2, copy x2",
         "runs": [ids["clean1"], ids["flipped"], ids["clean2"]], "deliberate": [ids["flipped"]],
         "diverging_since": None, "clean_since": ids["clean1"]}]
