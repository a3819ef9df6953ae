"""The markers tests/conftest.py gives each test at collection (what it needs: a job, a browser, the other MPIs,
PostgreSQL, minutes): every test of the suite has them, and a new test that starts a job is kept out of the quick set
(README.md's `bash scripts/test.sh -m quick`) however it starts the job, without a line written for it."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NEEDS = ("job", "browser", "mpis", "postgres", "slow")

# a plugin that prints, once collected, each test's id and the marker names it carries
PRINT_MARKERS = '''
import json

def pytest_collection_finish(session):
    print("MARKERS " + json.dumps({i.nodeid: sorted({m.name for m in i.iter_markers()}) for i in session.items}))
'''

# tests as a newcomer writes them: the ones named job_* start a job, each in its own way
NEW_TESTS = '''
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import echorun, mpirun_native, run_group


def launch(tmp_path):
    return run_group(["mpirun", "-n", "2", "true"], 60)


@pytest.fixture
def finished_run(tmp_path):
    return echorun(["-n", "2", "true"], tmp_path / "run")


@pytest.fixture
def browser():
    yield None


def test_job_calls_echorun(tmp_path):
    assert echorun(["-n", "2", "--clones", "2", "true"], tmp_path / "run").returncode == 0


def test_job_through_a_helper(tmp_path):
    assert launch(tmp_path).returncode == 0


def test_job_in_a_nested_function(mpi):
    def native():
        return mpirun_native(mpi, 2, ["true"])
    assert native().returncode == 0


def test_job_through_a_fixture(finished_run):
    assert finished_run.returncode == 0


def test_job_with_the_programs(programs):
    assert programs


def test_job_as_a_command(tmp_path):
    subprocess.run([str(Path(sys.executable).parent / "echorun"), "-n", "2", "true"], check=True)


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_store(db, request):
    if db == "postgresql":
        request.getfixturevalue("postgres_db")


def test_page(browser):
    assert browser is None


def test_arithmetic():
    assert 1 + 1 == 2
'''


def markers(tmp_path: Path, *args: str, cwd: Path = REPO) -> dict[str, list[str]]:
    """Each collected test's markers, as `pytest --collect-only *args` run in `cwd` gives them."""
    (tmp_path / "print_markers.py").write_text(PRINT_MARKERS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "print_markers", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(next(line for line in r.stdout.splitlines() if line.startswith("MARKERS "))[8:])


def test_every_test_of_the_suite_is_classified(tmp_path):
    from tests.conftest import QUICK_JOBS

    found = markers(tmp_path, "tests")
    assert len(found) > 100, "the suite was collected"
    unclassified = [t for t, m in found.items() if "quick" not in m and not set(NEEDS) & set(m)]
    assert not unclassified, f"tests with no marker of what they need (tests/conftest.py): {unclassified[:10]}"
    wrongly_quick = [t for t, m in found.items() if "quick" in m and set(m) & set(NEEDS) - {"job"}]
    assert not wrongly_quick, f"quick tests that need a browser, other MPIs, PostgreSQL or minutes: {wrongly_quick}"
    unnamed_jobs = [t for t, m in found.items() if {"quick", "job"} <= set(m) and not t.startswith(QUICK_JOBS)]
    assert not unnamed_jobs, f"quick tests that start a job without being named in QUICK_JOBS: {unnamed_jobs}"
    assert any({"quick", "job"} <= set(m) for m in found.values()), "the quick set runs some real jobs"
    for need in NEEDS:
        assert any(need in m for m in found.values()), f"no test marked {need}"


def test_a_new_test_that_starts_a_job_is_not_quick(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_new.py").write_text(NEW_TESTS)
    found = {t.split("::")[1]: set(m) for t, m in markers(tmp_path, "-p", "tests.conftest", "test_new.py",
                                                                 cwd=work).items()}
    jobs = {name for name in found if name.startswith("test_job_")}
    assert len(jobs) == 6
    for name in jobs:
        assert found[name] >= {"job"} and "quick" not in found[name], (name, found[name])
    assert found["test_store[postgresql]"] == {"postgres", "parametrize"}
    assert found["test_store[sqlite]"] == {"quick", "parametrize"}
    assert found["test_page"] == {"browser"}
    assert found["test_arithmetic"] == {"quick"}


def test_the_test_command_fails_when_it_selects_no_test():
    """pytest exits 5 when no test was selected: scripts/test.sh (what .ci/run runs) must fail then, saying why."""
    r = subprocess.run(["bash", "scripts/test.sh", "tests/test_markers.py", "-m", "quick and slow"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "no test was selected" in r.stderr
