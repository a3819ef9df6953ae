"""A role is one folder and one registry line: a role written here into a temporary folder, with an option, one
metric and one section of the run page, registered by adding its module to echo/collectors/roles.py's ROLES (in the
processes that run echorun, the report and the server, before anything reads the registry), shows its option, its
metric and its section on the run page in a real Chromium, and its section in `mpiecho report`, with no other file
of the project edited."""

import json
import subprocess
import sys
import textwrap
import urllib.request

from echo.runformat.records import read
from echo.runformat.runfiles import plan_procs, record_file
from tests.conftest import run_group, serving

ROLE = '''
"""tally: how many MPI calls each copy recorded, as a role reads it from the records after the job."""

from pathlib import Path
from typing import Any

def given(opts: Any) -> bool:
    return bool(opts.tally)


def meta(opts: Any) -> dict:
    return {"tally": bool(opts.tally)}


def ingest_rows(run_dir: Path, procs: list, meta: dict) -> tuple[list, list]:
    if not meta.get("tally"):
        return [], []
    from echo.runformat.records import read
    from echo.runformat.runfiles import record_file

    return [], [dict(app_rank=app, copy=copy, name="tally calls", value=float(len(read(record_file(run_dir, real))
                                                                                   .records)), unit="calls")
                for real, app, copy, _ in procs]


def _rows(session: Any, run_id: str) -> list:
    from sqlalchemy import select

    from echo.store.models import Metric

    return session.scalars(select(Metric).where(Metric.run_id == run_id, Metric.name == "tally calls")
                           .order_by(Metric.app_rank, Metric.copy)).all()


def report_section(session: Any, run: Any) -> list[str]:
    rows = _rows(session, run.id)
    return ["tally:"] + [f"  rank {m.app_rank} copy {m.copy}: {m.value:.0f} calls" for m in rows] if rows else []


def run_context(session: Any, run: Any, procs: list, events: list) -> dict | None:
    rows = _rows(session, run.id)
    return {"tally": [(m.app_rank, m.copy, int(m.value)) for m in rows]} if rows else None


from echo.collectors.role import Pages, Role, Section

ROLE = Role(
    name="tally", description="the MPI calls each copy recorded",
    options=({"flags": ["--tally"], "action": "store_true", "help": "count each copy's recorded calls"},),
    flag="--tally", listed=4, precedence=4, given=given, meta=meta, ingest=ingest_rows, report=report_section,
    pages=Pages(run=(Section("run.html", run_context),)),
)
'''

TEMPLATE = '''<h2>Calls recorded per copy</h2><table id="tally"><tr><th>rank</th><th>copy</th><th>calls</th></tr>
{% for rank, copy, n in tally %}<tr><td>{{ rank }}</td><td>{{ copy }}</td><td>{{ n }}</td></tr>{% endfor %}</table>
'''

# what echo/collectors/roles.py's one registry line does, in a process that is echorun, mpiecho or the server
REGISTERED = '''
import importlib
import sys

sys.path.insert(0, sys.argv[1])
from echo.collectors import roles

roles.ROLES = roles.registered(*roles.ROLES, importlib.import_module("tally"))
from echo import cli

sys.exit(cli.echorun_main(sys.argv[3:]) if sys.argv[2] == "echorun" else cli.mpiecho_main(sys.argv[3:]))
'''


def test_a_role_from_its_folder_on_the_run_page_and_in_the_report(browser, programs, tmp_path):
    from selenium.webdriver.common.by import By

    folder = tmp_path / "roles" / "tally"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(ROLE))
    (folder / "run.html").write_text(TEMPLATE)
    driver = tmp_path / "registered.py"
    driver.write_text(REGISTERED)
    with_role = [sys.executable, str(driver), str(tmp_path / "roles")]
    db, run_dir = f"sqlite:///{tmp_path / 'echo.db'}", tmp_path / "run"

    r = run_group([*with_role, "echorun", "--db", db, "--run-dir", str(run_dir), "-n", "2", "--clones", "2",
                   "--tally", *programs["p2p"]], 120)
    assert r.returncode == 0, r.stderr
    run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
    # what the role must find: each process's records, read here
    calls = {(app, copy): len(read(record_file(run_dir, real)).records) for real, app, copy, _ in plan_procs(run_dir)}
    assert len(calls) == 4 and all(n > 0 for n in calls.values())

    report = subprocess.run([*with_role, "mpiecho", "report", run_id, "--db", db], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "tally:" in report.stdout
    for (app, copy), n in calls.items():
        assert f"  rank {app} copy {copy}: {n} calls" in report.stdout

    with serving(db, tmp_path / "storage", mpiecho=[*with_role, "mpiecho"]) as url:
        stored = {(m["app_rank"], m["copy"]): m["value"] for m in json.loads(urllib.request.urlopen(
            f"{url}/api/runs/{run_id}/metrics?prefix=tally").read())}
        assert stored == {k: float(n) for k, n in calls.items()}
        browser.get(f"{url}/runs/{run_id}")
        rows = browser.find_elements(By.CSS_SELECTOR, "#tally tr")[1:]
        shown = {(int(a), int(c)): int(n) for a, c, n in ([td.text for td in row.find_elements(By.TAG_NAME, "td")]
                                                          for row in rows)}
        assert shown == calls
        headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
        assert "Calls recorded per copy" in headings
        # its metric is a row of the table of results too (the role keeps none apart), under the usual heading
        assert "Valgrind, sensitivity and other results" in headings
        results = [[td.text for td in row.find_elements(By.TAG_NAME, "td")]
                   for row in browser.find_elements(By.CSS_SELECTOR, "#metrics tr")[1:]]
        assert sorted((int(a), int(c)) for a, c, name, _ in results if name == "tally calls") == sorted(calls)

    # without the registry line the same store shows no trace of it: nothing else knows the role
    plain = subprocess.run([sys.executable, "-m", "echo", "report", run_id, "--db", db], capture_output=True,
                           text=True)
    assert plain.returncode == 0 and "tally:" not in plain.stdout
