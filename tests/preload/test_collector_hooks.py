"""Collectors' hooks are lists (preload/core/echo_collectors.c): a copy with two roles runs the hooks of both."""

from tests.conftest import echorun


def test_a_callgrind_slice_copy_is_perturbed_too(programs, tmp_path):
    # copies 1 and 2 of each rank are callgrind slices (Valgrind's hooks on entering every call and at the end)
    # and jittered (perturbation's hooks on the same events): when the last collector to subscribe took the
    # event for itself, no copy slept nor said so
    r = echorun(["--no-store", "-n", "2", "--clones", "3", "--perturb", "jitter:max=200us,seed=5",
                 "--valgrind-slice", "callgrind:2", "--slice-calls", "5", *programs["sdc_loop"]], tmp_path)
    assert r.returncode == 0, r.stderr
    profiles = sorted(p.name for p in (tmp_path / "valgrind").glob("*.callgrind.out"))
    assert profiles == [f"rank{a}.copy{c}.callgrind.out" for a in (0, 1) for c in (1, 2)]
    slept = {p.stem: float(line.split("\t")[1]) for p in (tmp_path / "metrics").glob("*.txt")
             for line in p.read_text().splitlines() if line.startswith("perturb jitter slept")}
    assert sorted(slept) == ["2", "3", "4", "5"] and all(s > 0 for s in slept.values()), slept
