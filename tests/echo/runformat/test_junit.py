"""echorun --junit with memcheck and SDC in one run, and sensitivity thresholds, read back by junitparser as a CI
dashboard reads JUnit."""

import pytest

from echo.collectors.perturb import sensitivity, stored
from echo.runformat import junit
from tests.conftest import echorun

junitparser = pytest.importorskip("junitparser", reason="junitparser is in the test extra (pip install -e '.[test]')")


def suites_of(path):
    xml = junitparser.JUnitXml.fromfile(str(path))
    return {s.name: s for s in xml}, xml


def test_memcheck_beside_sdc(programs, tmp_path):
    out = tmp_path / "ci.xml"
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", "--valgrind", "memcheck", "--junit",
                 str(out), *programs["memerror"]], tmp_path / "run", timeout=300)
    assert r.returncode == 0, r.stderr
    suites, xml = suites_of(out)
    assert set(suites) == {"echo sdc memerror", "echo memcheck memerror"}
    mem = suites["echo memcheck memerror"]
    cases = {c.name: c for c in mem}
    bad = cases["rank 1 copy 1: no memcheck errors in the program"]
    good = cases["rank 0 copy 1: no memcheck errors in the program"]
    assert not bad.is_passed and bad.result[0].message == "2 memcheck errors in the program"
    assert "InvalidRead" in bad.result[0].text and "peek" in bad.result[0].text
    assert good.is_passed
    assert mem.tests == 2 and mem.failures == 1 and xml.failures == 1 and xml.tests == mem.tests + 3
    # times: each case the process's own time in MPI's world, within the job's
    assert all(0 < c.time <= mem.time for c in mem) and xml.time == mem.time > 0
    assert suites["echo sdc memerror"].time == xml.time
    assert all(c.is_passed for c in suites["echo sdc memerror"])


def judge(out, run, program, min_digits):
    """The JUnit file of a perturbed run judged again: its sensitivity suite (the role's) alone."""
    junit.add_suites(out, [stored.sensitivity_suite(run, program, 1.0, min_digits)], 1.0, after_sdc=False)


def test_sensitivity_threshold(programs, tmp_path):
    run = tmp_path / "run"
    out = tmp_path / "digits.xml"
    r = echorun(["--no-store", "-n", "2", "--clones", "3", "--perturb", "rounding", "--junit", str(out),
                 "--min-digits", "99", *programs["cancel"], "cancel"], run)
    assert r.returncode == 0, r.stderr
    suites, xml = suites_of(out)
    sens = suites["echo sensitivity cancel"]
    assert sens.tests == 2 and sens.failures == 2  # no result keeps 99 digits
    fewest = {r.rank: r.min_digits for r in sensitivity.analyse(run)}
    for case in sens:
        rank = int(case.name.split()[1])
        assert case.name == f"rank {rank} keeps at least 99 significant digits" and case.time > 0
        assert case.result[0].message.startswith(f"fewest digits {fewest[rank]:.1f} at call #")
    # the same run judged against a threshold each rank meets, and one only the better rank meets
    low = min(fewest.values())
    judge(out, run, str(programs["cancel"][0]), min_digits=low - 0.5)
    suites, _ = suites_of(out)
    assert all(c.is_passed for c in suites["echo sensitivity cancel"])
    if max(fewest.values()) - low > 0.2:
        judge(out, run, str(programs["cancel"][0]), min_digits=low + 0.1)
        suites, _ = suites_of(out)
        failed = {int(c.name.split()[1]) for c in suites["echo sensitivity cancel"] if not c.is_passed}
        assert failed == {r for r, d in fewest.items() if d < low + 0.1}


def test_junit_needs_something_to_judge(programs, tmp_path):
    r = echorun(["--no-store", "-n", "1", "--junit", str(tmp_path / "x.xml"), *programs["p2p"]], tmp_path / "run")
    assert r.returncode == 2 and "--junit reports SDC" in r.stderr and "Traceback" not in r.stderr
