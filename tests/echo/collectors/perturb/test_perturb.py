"""Perturbation across copies, real runs: rounding, seeded noise, jitter in independent worlds."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from echo.collectors import perturb
from echo.collectors.perturb import sensitivity
from echo.runformat.records import read_run
from tests.conftest import echorun, lines_by_rank

BIN = Path(sys.executable).parent


def test_specs():
    assert perturb.parse("rounding", None, [4, 4]) == (["perturb rounding 0 0", "worlds lockstep"], "lockstep")
    assert perturb.parse("noise:ulp=2,seed=7", None, [3])[0][0] == "perturb noise 2.0 7"
    assert perturb.parse("jitter:max=2ms", None, [3, 3]) == (["perturb jitter 2000 1", "worlds independent"],
                                                             "independent")


@pytest.mark.parametrize(("spec", "worlds", "copies", "message"), [
    ("rounding", None, [1, 1], "give ranks 2 or more"),
    ("jitter:max=5us", "lockstep", [2], "needs --worlds independent"),
    ("noise:ulp=1", "independent", [3, 2], "the same number of copies for every rank"),
    ("noise:db=1", None, [2], "unknown setting 'db'"),
    ("gamma", None, [2], "expected rounding, noise"),
    ("jitter:max=soon", None, [2], "expected a time such as 50us"),
])
def test_bad_specs(spec, worlds, copies, message):
    with pytest.raises(perturb.PerturbError, match=message):
        perturb.parse(spec, worlds, copies)


def test_digits_estimator():
    s, low = sensitivity.digits(np.array([[1.0, 2.0], [1.0, 2.0 + 2e-6], [1.0, 2.0 - 2e-6]]))
    assert s[0] == sensitivity.FULL_DIGITS and 5.5 < s[1] < 6.2 and low[1] < s[1]


def run(programs, tmp_path, name, *opts, args=()):
    r = echorun(["--no-store", "-n", "2", *opts, *programs[name], *args], tmp_path)
    assert r.returncode == 0, r.stderr
    return r, sensitivity.analyse(tmp_path)


def test_rounding_shows_the_cancellation(programs, tmp_path):
    _, bad = run(programs, tmp_path / "c", "cancel", "--clones", "4", "--perturb", "rounding", args=["cancel"])
    _, good = run(programs, tmp_path / "s", "cancel", "--clones", "4", "--perturb", "rounding", args=["stable"])
    for b, g in zip(bad, good, strict=True):
        assert b.min_digits < 6 and g.min_digits > 11, (b.min_digits, g.min_digits)
        assert b.first_parting and b.first_parting[1] == "MPI_Allreduce"
        assert b.behaviour == "same calls on every copy"
        # lock-step: a printed number alike on every copy is not measured (None), never "15.9 digits"
        assert min(d for _, d in b.outputs if d is not None) < 6 and all(d is None or d > 11 for _, d in g.outputs)
    roles = sorted({f.role for f in read_run(tmp_path / "c")})
    assert roles == ["representative", "rounding-downward", "rounding-toward-zero", "rounding-upward"]


def test_noise_with_a_seed_reproduces_exactly(programs, tmp_path):
    slots = []
    for i in range(2):
        run(programs, tmp_path / f"n{i}", "sdc_loop", "--clones", "3", "--perturb", "noise:ulp=4,seed=7")
        slots.append({(f.app_rank, f.copy): f.records["slot"].copy() for f in read_run(tmp_path / f"n{i}")})
    assert slots[0].keys() == slots[1].keys()
    for key in slots[0]:
        assert np.array_equal(slots[0][key], slots[1][key]), key
    assert not np.array_equal(slots[0][0, 1], slots[0][0, 2]), "each copy has its own noise"
    assert np.array_equal(slots[0][0, 0][:, :3], slots[0][0, 0][:, :3]), "copy 0 is not perturbed"
    r = sensitivity.analyse(tmp_path / "n0")
    assert all(x.first_parting is not None and x.min_digits < sensitivity.FULL_DIGITS for x in r)


def test_jitter_changes_timing_not_a_deterministic_result(programs, tmp_path):
    r, res = run(programs, tmp_path, "sdc_loop", "--clones", "3", "--perturb", "jitter:max=200us,seed=5")
    out = {c: lines_by_rank((tmp_path / "output" / f"rank0.copy{c}.out").read_text()) for c in range(3)}
    assert out[0] == out[1] == out[2]
    assert all(x.min_digits == sensitivity.FULL_DIGITS and x.first_parting is None for x in res)
    slept = [float(line.split("\t")[1]) for p in (tmp_path / "metrics").glob("*.txt")
             for line in p.read_text().splitlines() if line.startswith("perturb jitter slept")]
    assert len(slept) == 4 and all(s > 0 for s in slept), "copies 1 and 2 of both ranks waited"


def test_arrival_order_differs_between_worlds_only_under_jitter(programs, tmp_path):
    differ = []
    for attempt in range(3):  # the order is MPI's: jitter makes a difference likely, not certain
        r = echorun(["--no-store", "-n", "3", "--clones", "3", "--perturb", "jitter:max=300us,seed=" + str(attempt),
                     *programs["order"]], tmp_path / f"j{attempt}")
        assert r.returncode == 0, r.stderr
        rank0 = sensitivity.analyse(tmp_path / f"j{attempt}")[0]
        differ.append(rank0.first_parting is not None and "differently" in rank0.behaviour)
        if differ[-1]:
            break
    assert any(differ), "jitter changed the arrival order in at least one of three runs"
    # without jitter (lock-step), copies take copy 0's messages: same order, same result (the noise only touches
    # floating-point data a copy receives, and rank 0 receives integers here)
    r = echorun(["--no-store", "-n", "3", "--clones", "3", "--perturb", "noise:ulp=1", *programs["order"]],
                tmp_path / "lock")
    rank0 = sensitivity.analyse(tmp_path / "lock")[0]
    assert rank0.behaviour == "same calls on every copy" and rank0.first_parting is None


def test_sensitivity_command_and_store(programs, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--clones", "4", "--perturb", "rounding", *programs["cancel"], "cancel"],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(BIN / "mpiecho"), "sensitivity", "--db", db], capture_output=True, text=True).stdout
    assert "s = -log10(sigma/|mu|) over 4 copies" in out and "rank 1: fewest digits" in out
    assert "95% at least" in out
    rep = subprocess.run([str(BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True).stdout
    assert "sensitivity: " in rep and "copies part at call #" in rep


def test_env_tells_the_program_its_variation(tmp_path):
    code = "import os; from mpi4py import MPI; print(f'r{MPI.COMM_WORLD.rank}: {os.environ[\"ECHO_PERTURB\"]}')"
    r = echorun(["--no-store", "-n", "1", "--clones", "2", "--output", "all", "--perturb", "noise:ulp=1,seed=9",
                 sys.executable, "-c", code], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "[rank 0 copy 1] r0: noise 1.0 9 id=1" in r.stdout


def test_lockstep_never_labels_a_value_it_did_not_measure(programs, tmp_path):
    """sdc_loop prints the sum MPI_Allreduce gave it and a value of its own. In lock-step every copy takes copy 0's
    sum (with a few ulps of seeded noise, below the 13 digits printed), so that sum prints alike and is said not
    measured (never "15.9 digits"); independent worlds measure it (noise of about 1e-7 relative: copies' sums part
    within the digits printed)."""
    sums = {}
    for worlds, how in (("lockstep", "noise:ulp=4,seed=3"), ("independent", "noise:ulp=1e9,seed=3")):
        db = f"sqlite:///{tmp_path / worlds / 'echo.db'}"
        r = echorun(["--db", db, "-n", "2", "--clones", "3", "--perturb", how, "--worlds", worlds,
                     *programs["sdc_loop"]], tmp_path / worlds / "run")
        assert r.returncode == 0, r.stderr
        out = subprocess.run([str(BIN / "mpiecho"), "sensitivity", "--db", db], capture_output=True, text=True,
                             timeout=120).stdout
        printed = (tmp_path / worlds / "run" / "output" / "rank0.copy0.out").read_text()
        printed_sum = sensitivity.NUMBER.findall(printed)[0]
        sums[worlds] = next(line for line in out.splitlines() if line.startswith(f"  output {printed_sum}:"))
        report = subprocess.run([str(BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True,
                                timeout=120).stdout
        ulp = float(how.split("=")[1].split(",")[0])
        assert f"  copies   varied on purpose (noise:ulp={ulp:g},seed=3 ({worlds})): not compared for corruption" \
            in report
        said = [line for line in report.splitlines() if line.startswith("  sensitivity: ")]
        assert [line.split(":")[1] for line in said] == [" rank 0", " rank 1"], said  # a rank's, no "copy None"
    assert sums["lockstep"].endswith("not measured (in lock-step every copy takes what copy 0 received, so a value "
                                     "that came from MPI is the same on every copy by construction; --worlds "
                                     "independent measures it)")
    digits = float(sums["independent"].split(": ")[1].split()[0])
    assert digits < 12, sums["independent"]
