"""mpi4py's own suite on every MPI besides the primary one: a fixed subset of its modules, built against each MPI
(the mpi4py of scripts/mpis.sh), natively and under `--clones 2`, -n 2: every test that passes natively passes on
every representative, and every copy's outcome is its representative's, but the differences listed with their
reason.  The primary MPI runs the whole suite (tests/conformance/test_mpi4py_suite.py); the whole suite on each
other MPI is `python -m tests.conformance.mpi4py_suite --python .mpis/<mpi>/bin/python` with ECHO_MPICC naming its
mpicc (bench/results/conformance-mpis.md)."""

from __future__ import annotations

import pytest

from tests.conformance import mpi4py_suite as suite
from tests.portability.test_mpis import TARGETS, has_mpi4py

# One module or two of every kind of call, a minute or two per MPI here: messages (objects, buffers), collectives
# (blocking, nonblocking, v-forms), requests and statuses (MPI-4.1's get_status_all/any/some), communicators and
# their buffers (MPI-4.1), sessions, error handlers (MPI_THREAD_MULTIPLE: mpi4py's default), one-sided, the
# MPI-4.1 process buffer, pkl5's large messages and a rank's own subprocesses (test_mpiapi runs nm).  Spawn is in
# the C battery (tests/portability/test_mpis.py's spawn): mpi4py's test_spawn hangs now and then under clones.
MODULES = ["test_p2p_obj", "test_p2p_buf", "test_cco_buf", "test_cco_nb_vec", "test_request", "test_status",
           "test_comm", "test_buffer", "test_session", "test_errhandler", "test_rma", "test_util_pkl5",
           "test_mpiapi"]
STALL = 180  # seconds without a result before a job counts as hung
RETRIES = 2  # aborts in a module after which it is given up

# Differences by design, on every MPI: test id -> why (docs/mpis.md)
KNOWN = {
    "test_threads.TestMPIThreads.testIsThreadMainInThread": "with clones the thread level is at most FUNNELED",
}


@pytest.mark.parametrize("name", [t for t in TARGETS if t != "mpich5-abi"])
def test_mpi4py_subset_same_under_clones(name, tmp_path, monkeypatch):
    target = TARGETS[name]
    if not target.mpicc.is_file():
        pytest.skip(f"{name} is not installed ({target.mpicc} missing): {target.installed_by}")
    if not has_mpi4py(target.python):
        pytest.skip(f"no mpi4py built against {name} ({target.python}): scripts/mpis.sh builds it")
    # the suite's runner takes its MPI from ECHO_MPICC (for mpirun natively, and for echorun) and its Python from
    # APP_PYTHON
    monkeypatch.setenv("ECHO_MPICC", str(target.mpicc))
    monkeypatch.setattr(suite, "APP_PYTHON", str(target.python))
    suite.mpirun.cache_clear()
    suite.oversubscribe.cache_clear()
    try:
        testdir = suite.suite_dir()
        native = suite.run_config(suite.Config(2, 0), testdir, MODULES, tmp_path, STALL, RETRIES, log=False)
        assert not native.interruptions, native.interruptions
        assert all(native.counts(p)["pass"] > 0 for p in native.config.processes()), native.counts((0, 0))
        echo = suite.run_config(suite.Config(2, 2), testdir, MODULES, tmp_path, STALL, RETRIES, log=False)
    finally:
        suite.mpirun.cache_clear()
        suite.oversubscribe.cache_clear()
    wrong = [d for d in suite.differences(native, echo) if d.test not in KNOWN]
    assert not wrong, f"{name}: {len(wrong)} difference(s) from native (on copies: from copy 0)\n" + \
        "\n".join(suite.grouped_differences([echo], {2: native}))
