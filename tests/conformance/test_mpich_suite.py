"""MPICH's own test suite passes the same tests under echorun as natively (see mpich_suite.py), except the
differences echo has by design, listed in mpich_suite.KNOWN with their reasons.

The whole suite (about 640 runs in each of four modes) takes hours on a 2-core machine; CI runs a fixed subset:
two or three tests of every category, among them those that found echo's bugs, natively, under --clones 2 and,
in the categories SDR covers, under --mode sdr --replicas 2 (where a test must pass or be refused with the call
named).  The full matrix: `python -m tests.conformance.mpich_suite`.  Skips, saying why, only when MPICH's source
package cannot be had.

The same runner on Debian's MPICH (ON_MPICH: one test of each kind, natively with hydra and under --clones 2 with
echo built for MPICH; skipped, saying why, when /usr/bin/mpicc.mpich is not installed), and a run killed at its
time limit there leaving no process behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from echo.build import MPI, detect_mpi
from tests.conformance.mpich_suite import (
    MODES,
    Built,
    SuiteUnavailable,
    acceptable,
    build,
    known_reason,
    run_argv,
    run_one,
    select,
    suite_dir,
)
from tests.conformance.mpich_suite import (
    Test as SuiteTest,
)
from tests.conftest import compile_programs

SUBSET = [
    "coll/bcasttest -n 4", "coll/allredmany -n 4", "coll/nonblocking -n 4", "coll/p_order -n 2",
    "comm/dup -n 2", "comm/ic1 -n 4", "comm/cmsplit_type -n 4 .",
    "pt2pt/mprobe -n 2", "pt2pt/dtype_send -n 2", "pt2pt/probe_unexp -n 4",
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
        if not mode.covers(test) or known_reason(test, mode, detect_mpi().family.lineage):
            continue
        got = run_one(test, mode, exe, tmp_path, TIMEOUT)
        assert acceptable(mode, got), f"{mode.name}: {got.outcome}: {got.message}"


# ---- the runner on MPICH (Debian's MPICH 4.0.2): its own suite on its own MPI ----

MPICH = Path("/usr/bin/mpicc.mpich")  # scripts/mpis.sh: apt-get install libmpich-dev mpich
# one test of each kind: a collective, point-to-point with the environment the testlist gives (MPICH's tuning
# variables, which hydra takes with -genv), one-sided, a communicator constructor, a datatype
ON_MPICH = [
    "coll/bcasttest -n 4",
    "pt2pt/sendrecv2 -n 2 MPIR_CVAR_ASYNC_PROGRESS=1 MPIR_CVAR_CH4_PROGRESS_THREAD_AFFINITY=auto "
    "MPIR_CVAR_ODD_EVEN_CLIQUES=0 MPIR_CVAR_NUM_CLIQUES=1",
    "rma/test4 -n 2",
    "comm/dup -n 2",
    "datatype/tfree -n 2",
]


@pytest.fixture(scope="module")
def suite_on_mpich() -> tuple[MPI, list[SuiteTest], Built]:
    if not MPICH.is_file():
        pytest.skip(f"Debian's MPICH is not installed ({MPICH} missing): apt-get install libmpich-dev mpich "
                    "(scripts/mpis.sh)")
    try:
        testdir = suite_dir()
    except SuiteUnavailable as e:
        pytest.skip(f"MPICH's test suite is not available: {e}")
    mpi = detect_mpi(str(MPICH))
    tests = [t for t in select(testdir, flavor=mpi.family.lineage) if t.id in ON_MPICH]
    assert sorted(t.id for t in tests) == sorted(ON_MPICH), "a test is missing from the testlists"
    built = build(testdir, tests, mpi.mpicc, log=False)
    assert not built.failed, built.failed
    return mpi, tests, built


@pytest.mark.parametrize("test_id", ON_MPICH)
def test_same_outcome_on_mpich(suite_on_mpich, tmp_path, test_id):
    """Natively with hydra's mpirun (no Open MPI options) and under --clones 2 with echo built for MPICH."""
    mpi, tests, built = suite_on_mpich
    (test,) = [t for t in tests if t.id == test_id]
    exe = built.exe[f"{test.category}/{test.name}"]
    assert "--oversubscribe" not in run_argv(test, NATIVE, exe, tmp_path, mpi)
    native = run_one(test, NATIVE, exe, tmp_path, TIMEOUT, mpi=mpi)
    assert native.outcome == "pass", f"natively: {native.outcome}: {native.message}"
    got = run_one(test, CLONES, exe, tmp_path, TIMEOUT, mpi=mpi)
    assert got.outcome == "pass", f"{CLONES.name}: {got.outcome}: {got.message}"


@pytest.mark.parametrize("mode", [NATIVE, CLONES], ids=lambda m: m.name)
def test_a_hang_on_mpich_leaves_no_process(suite_on_mpich, tmp_path, mode):
    """A run killed at its time limit is ended whole: hydra starts every rank (and its proxy) in a session of its
    own, so killing the job's process group alone leaves them running."""
    mpi, _, _ = suite_on_mpich
    exe = Path(compile_programs(mpi, tmp_path, None, ["deadlock"])["deadlock"][0])
    got = run_one(SuiteTest("pt2pt", "deadlock", 2), mode, exe, tmp_path, timeout=8, mpi=mpi)
    assert got.outcome == "hang", got
    left = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, exe)]
    assert not left, f"processes of the killed job left running: {left}"


def _runs(proc: Path, exe: Path) -> bool:
    try:
        return str(exe).encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False  # gone meanwhile
