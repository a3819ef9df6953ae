"""mpi4py's own test suite passes the same tests under echorun as natively (see mpi4py_suite.py),
except the differences echo has by design, listed in KNOWN with their reasons.

The full matrix (-n 1, 2, 3; 2 and 3 copies) takes longer than CI allows on a 2-core machine; CI runs
-n 2 with 2 copies, which has point-to-point and collective traffic between ranks and a copy for each.
The full matrix: `python -m tests.conformance.mpi4py_suite`. ECHO_MPI4PY_MODULES=test_comm,test_p2p_obj
limits this test to some of the suite's modules."""

import os

import pytest

from tests.conformance.mpi4py_suite import (
    Config,
    differences,
    grouped_differences,
    passing_differences,
    run_config,
    suite_dir,
    suite_modules,
)

CI_CONFIGS = [Config(2, 2)]
STALL = 180  # seconds without a result before a job counts as hung (one test of test_util_dtlib takes 20 s here)
RETRIES = 2  # aborts in a module after which it is given up

# The differences echo has by design, each with its reason (docs/replication.md). A test, or a whole module
# (its name with a trailing dot), listed here may differ; any other difference fails this test.
KNOWN = {
    "test_dynproc.TestDPM.testJoin": "MPI_Comm_join (a socket per process) is not supported with clones",
    "test_ulfm.": "Open MPI's ULFM extensions (MPIX_*) stop a job with clones: a copy is no member of the real "
                  "communicator (echorun --mode reinit uses them)",
    "test_threads.TestMPIThreads.testIsThreadMainInThread": "with clones the thread level is at most FUNNELED: "
                                                            "mpi4py skips the test",
    "test_win.TestWinAllocateSharedWorld.testSharedQuery": "a copy's shared segments are images of its "
                                                           "representative's: their addresses differ (docs/rma.md)",
    "test_spawn.": "MPI_Comm_spawn_multiple under clones hangs now and then (TestSpawnMultipleWorldMany."
                   "testCommSpawnDefaults2: 1 of 3 whole-suite runs on 26 Nov 2026, not in a run of the module "
                   "alone; earlier CI runs saw test_dynproc hang the same way): not yet diagnosed; "
                   "tests/preload/test_dynamic.py checks spawn under clones on every run",
    "test_util_sync.": "its spin loops load window memory that other ranks' accumulates change between calls: a "
                       "representative may leave a loop a turn before its copies (docs/rma.md, Limits); passes "
                       "most of the time",
}


def known(test: str) -> bool:
    return test in KNOWN or any(key.endswith(".") and test.startswith(key) for key in KNOWN)


@pytest.mark.parametrize("config", CI_CONFIGS, ids=lambda c: c.slug)
def test_same_tests_pass_under_echo(config, tmp_path):
    testdir = suite_dir()
    chosen = os.environ.get("ECHO_MPI4PY_MODULES")
    # a module whose every difference is known would only cost time (test_spawn's alone: two minutes here): left out
    modules = chosen.split(",") if chosen else [m for m in suite_modules(testdir) if f"{m}." not in KNOWN]
    native = run_config(Config(config.nranks, 0), testdir, modules, tmp_path, STALL, RETRIES, log=False)
    # the comparison means something only if the suite itself runs cleanly natively
    assert not native.interruptions, native.interruptions
    assert all(native.counts(p)["pass"] > 0 for p in native.config.processes()), native.counts((0, 0))
    echo = run_config(config, testdir, modules, tmp_path, STALL, RETRIES, log=False)
    wrong = [d for d in passing_differences(native, echo) + [d for d in differences(native, echo) if d.proc[1] > 0]
             if not known(d.test)]
    assert not wrong, f"{config.name}: {len(wrong)} difference(s) from native (on copies: from copy 0)\n" + \
        "\n".join(grouped_differences([echo], {config.nranks: native}))
