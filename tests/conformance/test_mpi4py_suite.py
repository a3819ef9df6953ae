"""mpi4py's own test suite passes the same tests under echorun as natively (see mpi4py_suite.py).

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
STALL = 90  # seconds without a result before a job counts as hung
RETRIES = 2  # aborts in a module after which it is given up


@pytest.mark.parametrize("config", CI_CONFIGS, ids=lambda c: c.slug)
def test_same_tests_pass_under_echo(config, tmp_path):
    testdir = suite_dir()
    chosen = os.environ.get("ECHO_MPI4PY_MODULES")
    modules = chosen.split(",") if chosen else suite_modules(testdir)
    native = run_config(Config(config.nranks, 0), testdir, modules, tmp_path, STALL, RETRIES, log=False)
    # the comparison means something only if the suite itself runs cleanly natively
    assert not native.interruptions, native.interruptions
    assert all(native.counts(p)["pass"] > 0 for p in native.config.processes()), native.counts((0, 0))
    echo = run_config(config, testdir, modules, tmp_path, STALL, RETRIES, log=False)
    wrong = passing_differences(native, echo) + [d for d in differences(native, echo) if d.proc[1] > 0]
    assert not wrong, f"{config.name}: {len(wrong)} difference(s) from native (on copies: from copy 0)\n" + \
        "\n".join(grouped_differences([echo], {config.nranks: native}))
