"""MPICH's own test suite passes the same tests under echorun as natively (see mpich_suite.py), except the
differences echo has by design, listed in mpich_suite.KNOWN with their reasons.

The whole suite (about 640 runs in each of four modes) takes hours on a 2-core machine; CI runs a fixed subset:
two or three tests of every category, among them those that found echo's bugs, natively, under --clones 2 and,
in the categories SDR covers, under --mode sdr --replicas 2 (where a test must pass or be refused with the call
named).  The full matrix: `python -m tests.conformance.mpich_suite`.  Skips, saying why, only when MPICH's source
package cannot be had."""

from __future__ import annotations

import pytest

from echo.build import detect_mpi
from tests.conformance.mpich_suite import (
    MODES,
    SuiteUnavailable,
    acceptable,
    build,
    known_reason,
    run_one,
    select,
    suite_dir,
)

SUBSET = [
    "coll/bcasttest -n 4", "coll/allredmany -n 4", "coll/nonblocking -n 4", "coll/p_order -n 2",
    "comm/dup -n 2", "comm/ic1 -n 4", "comm/cmsplit_type -n 4 .",
    "pt2pt/mprobe -n 2", "pt2pt/dtype_send -n 2",
    "rma/test4 -n 2", "rma/transpose4 -n 2", "rma/win_shared_noncontig_put -n 4",
    "rma/win_shared_put_flush_load -n 3",
    "group/groupcreate -n 4",
    "datatype/tfree -n 2", "datatype/concurrent_irecv -n 3",
    "topo/dims1 -n 4", "topo/graphcr -n 4",
    "io/rdwrord -n 4",
    "init/version -n 1", "init/initstat -n 1", "init/session -n 4",
    "attr/attrend -n 4", "attr/baseattrcomm -n 1", "attr/attrerr -n 1",
]
TIMEOUT = 120.0
NATIVE, CLONES, SDR = MODES[0], MODES[1], MODES[3]


@pytest.fixture(scope="module")
def suite():
    try:
        testdir = suite_dir()
    except SuiteUnavailable as e:
        pytest.skip(f"MPICH's test suite is not available: {e}")
    tests = [t for t in select(testdir) if t.id in SUBSET]
    assert sorted(t.id for t in tests) == sorted(SUBSET), "a test of the subset is missing from the testlists"
    built = build(testdir, tests, detect_mpi().mpicc, log=False)
    assert not built.failed, built.failed
    return tests, built


def test_the_subset_covers_every_category():
    from tests.conformance.mpich_suite import CATEGORIES

    assert {t.split("/")[0] for t in SUBSET} == set(CATEGORIES)


@pytest.mark.parametrize("test_id", SUBSET)
def test_same_outcome_under_echo(suite, tmp_path, test_id):
    tests, built = suite
    (test,) = [t for t in tests if t.id == test_id]
    exe = built.exe[f"{test.category}/{test.name}"]
    native = run_one(test, NATIVE, exe, tmp_path, TIMEOUT)
    # the comparison means something only if the test passes natively (it was chosen so)
    assert native.outcome == "pass", f"natively: {native.outcome}: {native.message}"
    for mode in (CLONES, SDR):
        if not mode.covers(test) or known_reason(test, mode, detect_mpi().flavor):
            continue
        got = run_one(test, mode, exe, tmp_path, TIMEOUT)
        assert acceptable(mode, got), f"{mode.name}: {got.outcome}: {got.message}"
