"""The SDR reliability planner against closed forms computed here, and `mpiecho plan --reliability` end to end."""

import json
import math
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from echo.reliability import (
    ReliabilityError,
    failure_probability,
    format_duration,
    format_table,
    load_overheads,
    overheads_for,
    parse_duration,
    parse_replicas,
    plan_reliability,
)

HOUR, DAY = 3600.0, 86400.0
YEAR = 365 * DAY
TREE = Path(__file__).resolve().parents[2]
MPIECHO = Path(sys.executable).parent / "mpiecho"


def probabilities(plan):
    return {row.replicas: row.p_lost for row in plan.rows}


def test_unreplicated_exponential_is_one_minus_exp_of_n_t_over_mtbf():
    n, mtbf, runtime = 1024, 5 * YEAR, 12 * HOUR
    plan = plan_reliability(n, mtbf, runtime, overheads_for([1]))
    assert plan.rows[0].p_lost == pytest.approx(1 - math.exp(-n * runtime / mtbf), rel=1e-12)
    assert plan.rows[0].hosts == n and plan.rows[0].runtime == runtime


def test_replicated_exponential_matches_the_closed_form_with_the_stretched_runtime():
    n, mtbf, runtime = 64, 30 * DAY, 2 * DAY
    plan = plan_reliability(n, mtbf, runtime, overheads_for([1, 2, 3], 0.05))
    for r in (2, 3):
        host = 1 - math.exp(-runtime * 1.05 / mtbf)
        assert probabilities(plan)[r] == pytest.approx(1 - (1 - host**r) ** n, rel=1e-9)
        assert plan.rows[r - 1].runtime == pytest.approx(runtime * 1.05)
        assert plan.rows[r - 1].hosts == n * r


def test_weibull_matches_its_closed_form_with_the_mean_at_the_mtbf():
    # shape 2: Gamma(1 + 1/2) = sqrt(pi)/2, so eta = 2 MTBF / sqrt(pi)
    n, mtbf, runtime = 16, 10 * DAY, 1 * DAY
    eta = 2 * mtbf / math.sqrt(math.pi)
    host = 1 - math.exp(-((runtime * 1.1 / eta) ** 2))
    plan = plan_reliability(n, mtbf, runtime, overheads_for([2], 0.1), weibull_shape=2)
    assert plan.rows[0].p_lost == pytest.approx(1 - (1 - host**2) ** n, rel=1e-9)


@pytest.mark.parametrize("shape", [0.5, 0.7, 2.0, 3.5])
def test_weibull_lifetime_has_the_mtbf_as_its_mean(shape):
    """E[T] = integral of the survival function 1 - F(t), by the midpoint rule over 0..60 MTBF."""
    mtbf, steps, end = 1.0, 200_000, 60.0
    dt = end / steps
    mean = sum(1 - failure_probability((i + 0.5) * dt, mtbf, shape) for i in range(steps)) * dt
    assert mean == pytest.approx(mtbf, rel=1e-3)


def test_weibull_shape_one_is_the_exponential():
    args = dict(nranks=300, mtbf=2 * YEAR, runtime=3 * DAY, overheads=overheads_for([1, 2, 3, 4]))
    exponential = probabilities(plan_reliability(**args))
    weibull = probabilities(plan_reliability(**args, weibull_shape=1.0))
    assert weibull == pytest.approx(exponential, rel=1e-12)


def test_tiny_probabilities_keep_their_digits():
    # 1 - exp(-1e-12) = 1e-12 - 5e-25: the naive 1 - (1 - F) would be off in the 4th digit
    plan = plan_reliability(1, 1e12, 1.0, overheads_for([1]))
    assert plan.rows[0].p_lost == pytest.approx(1e-12, rel=1e-11)
    # n groups each lost with F^r << 1: P ~ n F^r
    n, mtbf, runtime = 1024, 3000 * DAY, 12 * HOUR
    host = -math.expm1(-runtime * 1.05 / mtbf)
    plan = plan_reliability(n, mtbf, runtime, overheads_for([4]))
    assert plan.rows[0].p_lost == pytest.approx(n * host**4, rel=1e-9)


@pytest.mark.parametrize("mtbf,runtime,shape", [(5 * YEAR, 12 * HOUR, None), (30 * DAY, 2 * DAY, None),
                                                (YEAR, DAY, 0.7), (YEAR, 10 * DAY, 3.0)])
def test_loss_falls_with_every_replica(mtbf, runtime, shape):
    plan = plan_reliability(1024, mtbf, runtime, overheads_for([1, 2, 3, 4, 5]), weibull_shape=shape)
    p = [row.p_lost for row in plan.rows]
    assert all(a > b for a, b in pairwise(p)), p


def test_ranks_sharing_a_host_form_one_group():
    args = dict(mtbf=YEAR, runtime=5 * DAY, overheads=overheads_for([1, 2, 3]))
    grouped = plan_reliability(nranks=8, ranks_per_host=4, **args)
    assert probabilities(grouped) == probabilities(plan_reliability(nranks=2, **args))
    assert [row.hosts for row in grouped.rows] == [2, 4, 6]
    # 9 ranks, 4 per host: the last group has one rank but still its own r hosts
    uneven = plan_reliability(nranks=9, ranks_per_host=4, **args)
    assert probabilities(uneven) == probabilities(plan_reliability(nranks=3, **args))
    assert [row.hosts for row in uneven.rows] == [3, 6, 9]


def test_smallest_degree_meeting_the_target():
    plan = plan_reliability(1024, 3000 * DAY, 12 * HOUR, overheads_for([1, 2, 3, 4]), target=1e-3)
    assert [row.meets_target for row in plan.rows] == [False, True, True, True]
    assert plan.smallest_meeting_target == 2
    assert "smallest r meeting the target: 2" in format_table(plan)
    hopeless = plan_reliability(1024, 6 * HOUR, 12 * HOUR, overheads_for([1, 2, 3, 4]))
    assert hopeless.smallest_meeting_target is None
    assert "no r in 1,2,3,4 meets the target" in format_table(hopeless)


@pytest.mark.parametrize("mtbf,runtime,target", [(6 * HOUR, 12 * HOUR, 1e-3), (1000 * DAY, 12 * HOUR, 1e-3),
                                                 (1000 * DAY, 12 * HOUR, 1e-9), (YEAR, 30 * DAY, 0.5)])
def test_degree_needed_when_none_planned_meets_the_target(mtbf, runtime, target):
    plan = plan_reliability(1024, mtbf, runtime, overheads_for([1]), target=target)
    assert plan.smallest_meeting_target is None
    host = 1 - math.exp(-runtime / mtbf)
    lost = [1 - (1 - host**r) ** 1024 for r in range(1, plan.needed + 1)]
    assert lost[-1] <= target < lost[-2]
    assert f"with r=1's runtime ({format_duration(runtime)}) it would take r >= {plan.needed}" in format_table(plan)


def test_no_degree_helps_when_a_host_surely_fails():
    plan = plan_reliability(8, 1.0, DAY, overheads_for([1, 2]))
    assert plan.needed is None
    assert "a host almost surely fails during the run" in format_table(plan)


def test_durations():
    assert parse_duration("6h", "--mtbf") == 6 * HOUR
    assert parse_duration("90m", "--mtbf") == 5400
    assert parse_duration("2d", "--mtbf") == 2 * DAY
    assert parse_duration("1.5h", "--mtbf") == 5400
    assert parse_duration("45s", "--mtbf") == 45
    assert parse_duration("3600", "--mtbf") == 3600
    assert [format_duration(t) for t in (30, 90, 36 * HOUR, 3 * DAY)] == ["30s", "1.5m", "36h", "3d"]


def test_near_certain_loss_is_not_rounded_to_certain():
    # F = 1 - exp(-10) = 0.99995: "1.0000" would claim the run cannot survive
    plan = plan_reliability(1, 1.0, 10.0, overheads_for([1]))
    assert plan.rows[0].p_lost < 1 and "> 0.9999" in format_table(plan).splitlines()[2]


@pytest.mark.parametrize("text,why", [("6y", "unknown unit 'y'"), ("6hr", "unknown unit 'hr'"),
                                      ("-6h", "a duration must be positive"), ("0", "a duration must be positive"),
                                      ("soon", "not a duration"), ("", "not a duration")])
def test_bad_durations_name_the_option(text, why):
    with pytest.raises(ReliabilityError, match=f"^--runtime '{text}': {why}"):
        parse_duration(text, "--runtime")


def test_replicas_option():
    assert parse_replicas("3,1,2") == (1, 2, 3)
    for bad, why in (("0,2", "at least 1"), ("2,2", "given twice"), ("2,x", "positive integers")):
        with pytest.raises(ReliabilityError, match=why):
            parse_replicas(bad)


def test_overheads_from_a_benchmark_file(tmp_path):
    f = tmp_path / "overheads.json"
    f.write_text('{"2": 0.03, "3": 0.06}')
    plan = plan_reliability(4, YEAR, DAY, overheads_for([1, 2, 3], given=load_overheads(f)))
    assert [row.overhead for row in plan.rows] == [0.0, 0.03, 0.06]
    assert [row.runtime for row in plan.rows] == pytest.approx([DAY, DAY * 1.03, DAY * 1.06])
    with pytest.raises(ReliabilityError, match=r"no overhead for r=4; .* \(--replicas 1,2,3\)"):
        overheads_for([1, 2, 3, 4], given=load_overheads(f))


@pytest.mark.parametrize("text,why", [("{", "not JSON"), ("[0.03]", "expected a JSON object"),
                                      ('{"two": 0.03}', "key 'two' is not a replication degree"),
                                      ('{"2": "3%"}', "the overhead of r=2 is '3%'"),
                                      ('{"2": true}', "the overhead of r=2 is True")])
def test_bad_overhead_files(tmp_path, text, why):
    f = tmp_path / "o.json"
    f.write_text(text)
    with pytest.raises(ReliabilityError, match=f"^--overhead-from {f}: {why}"):
        load_overheads(f)


def test_bad_overhead_values():
    with pytest.raises(ReliabilityError, match="r=1 is the unreplicated run"):
        overheads_for([1, 2], given={1: 0.02, 2: 0.05})
    with pytest.raises(ReliabilityError, match="the overhead of r=2 is -0.1"):
        overheads_for([1, 2], given={2: -0.1})
    with pytest.raises(ReliabilityError, match="^--overhead -0.5: a fraction of the runtime, 0 or more"):
        overheads_for([1, 2], -0.5)


@pytest.mark.parametrize("kw,why", [(dict(nranks=0), "^-n 0: the application needs at least one rank"),
                                    (dict(ranks_per_host=0), "^--ranks-per-host 0: a host holds at least one rank"),
                                    (dict(weibull_shape=0.0), "^--weibull-shape 0.0: the shape must be positive"),
                                    (dict(target=1.0), "^--target 1.0: a probability strictly between 0 and 1"),
                                    (dict(target=0.0), "^--target 0.0: a probability strictly between 0 and 1"),
                                    (dict(mtbf=-1.0), "^--mtbf -1.0: must be a positive duration")])
def test_bad_model_values_name_the_option(kw, why):
    args = dict(nranks=4, mtbf=YEAR, runtime=DAY, overheads=overheads_for([1, 2])) | kw
    with pytest.raises(ReliabilityError, match=why):
        plan_reliability(**args)


def mpiecho(*args):
    env = dict(os.environ, PYTHONPATH=str(TREE))
    return subprocess.run([str(MPIECHO), *args], capture_output=True, text=True, env=env)


def test_cli_prints_the_table():
    r = mpiecho("plan", "--reliability", "--mtbf", "3000d", "--runtime", "12h", "-n", "1024")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("1024 ranks, 1 per host; host MTBF 3000d (exponential); runtime 12h")
    rows = {int(line.split()[0]): line.split() for line in lines[2:6]}
    assert rows[1] == ["1", "0.0%", "12h", "1024", "0.1569", "no"]
    assert rows[2][:4] == ["2", "5.0%", "12.6h", "2048"] and rows[2][5] == "yes"
    assert float(rows[2][4]) == pytest.approx(1 - (1 - (-math.expm1(-12.6 / (3000 * 24))) ** 2) ** 1024, rel=1e-2)
    assert lines[-1] == "smallest r meeting the target: 2"


def test_cli_json_with_every_option(tmp_path):
    f = tmp_path / "bench.json"
    f.write_text('{"2": 0.03, "3": 0.06}')
    r = mpiecho("plan", "--reliability", "--json", "--mtbf", "2d", "--runtime", "90m", "-n", "12",
                "--ranks-per-host", "4", "--weibull-shape", "0.7", "--overhead-from", str(f), "--replicas", "1,3,2",
                "--target", "1e-6")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [row["replicas"] for row in out["rows"]] == [1, 2, 3]
    assert [row["hosts"] for row in out["rows"]] == [3, 6, 9]
    assert out["distribution"] == "weibull" and out["weibull_shape"] == 0.7
    eta = 2 * DAY / math.gamma(1 + 1 / 0.7)
    for row, overhead in zip(out["rows"], (0.0, 0.03, 0.06), strict=True):
        host = 1 - math.exp(-((5400 * (1 + overhead) / eta) ** 0.7))
        assert row["p_lost"] == pytest.approx(1 - (1 - host ** row["replicas"]) ** 3, rel=1e-9)
        assert row["meets_target"] == (row["p_lost"] <= 1e-6)
    assert out["smallest_meeting_target"] == next((row["replicas"] for row in out["rows"] if row["meets_target"]),
                                                  None)


@pytest.mark.parametrize("bad,message", [
    ({"--mtbf": "6w"}, "mpiecho: --mtbf '6w': unknown unit 'w'; use s, m, h or d"),
    ({"--runtime": "-2h"}, "mpiecho: --runtime '-2h': a duration must be positive"),
    ({"-n": "0"}, "mpiecho: -n 0: the application needs at least one rank"),
    ({"--weibull-shape": "-1"}, "mpiecho: --weibull-shape -1.0: the shape must be positive"),
    ({"--target": "2"}, "mpiecho: --target 2.0: a probability strictly between 0 and 1"),
    ({"--overhead-from": "/nonexistent/o.json"}, "mpiecho: --overhead-from /nonexistent/o.json: cannot read it"),
])
def test_cli_bad_input_exits_2_naming_the_option(bad, message):
    # option=value: argparse takes a separate "-2h" for an option, not a value
    options = {"-n": "8", "--mtbf": "1d", "--runtime": "1h", **bad}
    r = mpiecho("plan", "--reliability", *(f"{option}={value}" for option, value in options.items()))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(message), r.stderr


def test_cli_plan_needs_a_kind_of_plan():
    r = mpiecho("plan", "--mtbf", "1d", "--runtime", "1h", "-n", "8")
    assert r.returncode == 2 and "the following arguments are required: --reliability" in r.stderr


def test_the_readme_example_shows_the_choice():
    """README's example is a table that tells degrees apart: the loss falls with r, the unreplicated run misses the
    target and some degree meets it (not P(lost) = 1.0000 on every row)."""
    line = next(x for x in (TREE / "README.md").read_text().splitlines() if x.startswith("mpiecho plan --reliability"))
    r = mpiecho(*line.split("#")[0].split()[1:], "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    losses = [row["p_lost"] for row in rows]
    assert all(a > b for a, b in pairwise(losses)) and losses[0] < 1
    assert not rows[0]["meets_target"] and any(row["meets_target"] for row in rows)
