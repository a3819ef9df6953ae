"""Runs modules of mpi4py's test suite in one MPI process and records every test's outcome.

    python mpi4py_driver.py TESTDIR OUTDIR JOBFILE

JOBFILE (JSON) names the modules to run, in order, and test ids to leave out. Each
process appends one JSON object per line to OUTDIR/rank<R>.copy<C>.jsonl, flushed at
once, so what ran before a job was aborted or killed is still there:
  {"module": M, "event": "start"}  and  {"module": M, "event": "end"}
  {"test": ID, "event": "start"}
  {"test": ID, "outcome": pass|skip|fail|error|xfail|xpass, "detail": ..., "seconds": ...}
The process's identity is its application rank and copy (ECHO_APP_RANK / ECHO_COPY
under echorun; its rank in MPI_COMM_WORLD and copy 0 natively).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import unittest
from typing import Any, TextIO


class JsonResult(unittest.TestResult):
    """A test result that writes each outcome as soon as it is known."""

    def __init__(self, log: TextIO) -> None:
        super().__init__()
        self.log = log
        self.failed_subtests: dict[str, str] = {}
        self.started = time.monotonic()

    def emit(self, **record: Any) -> None:
        self.log.write(json.dumps(record) + "\n")
        self.log.flush()

    def outcome(self, test: unittest.TestCase, outcome: str, detail: str = "") -> None:
        self.emit(test=test.id(), outcome=outcome, detail=detail[-2000:],
                  seconds=round(time.monotonic() - self.started, 3))

    @staticmethod
    def describe(err: tuple) -> str:
        """The exception line of a failure (what is worth grouping differences by) and its traceback."""
        exc_type, exc, tb = err
        last = traceback.format_exception_only(exc_type, exc)[-1].strip()
        return last + "\n" + "".join(traceback.format_tb(tb)[-3:])

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self.started = time.monotonic()
        self.emit(test=test.id(), event="start")

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        if test.id() in self.failed_subtests:
            self.outcome(test, "fail", self.failed_subtests.pop(test.id()))
        else:
            self.outcome(test, "pass")

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: tuple | None) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:  # the test as a whole fails; keep the first subtest's reason
            self.failed_subtests.setdefault(test.id(), f"{subtest.id()}: {self.describe(err)}")

    def addFailure(self, test: unittest.TestCase, err: tuple) -> None:
        super().addFailure(test, err)
        self.outcome(test, "fail", self.describe(err))

    def addError(self, test: unittest.TestCase, err: tuple) -> None:
        # also class and module fixtures (setUpClass...), whose "test" is a holder with the fixture's name
        super().addError(test, err)
        self.outcome(test, "error", self.describe(err))

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self.outcome(test, "skip", reason)

    def addExpectedFailure(self, test: unittest.TestCase, err: tuple) -> None:
        super().addExpectedFailure(test, err)
        self.outcome(test, "xfail", self.describe(err))

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self.outcome(test, "xpass")


def without(suite: unittest.TestSuite, skip: set[str]) -> unittest.TestSuite:
    """The suite without the tests whose ids are in skip (nesting kept, so class fixtures still run)."""
    kept = unittest.TestSuite()
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            kept.addTest(without(item, skip))
        elif item.id() not in skip:
            kept.addTest(item)
    return kept


def main() -> None:
    testdir, outdir, jobfile = sys.argv[1:4]
    job = json.loads(open(jobfile).read())
    sys.path.insert(0, testdir)
    # as the suite's own runner does by default: no GPU array libraries
    sys.modules["cupy"] = None  # type: ignore[assignment]
    sys.modules["numba"] = None  # type: ignore[assignment]
    from mpi4py import MPI

    rank = int(os.environ.get("ECHO_APP_RANK", MPI.COMM_WORLD.Get_rank()))
    copy = int(os.environ.get("ECHO_COPY", 0))
    skip = set(job["skip"])
    with open(os.path.join(outdir, f"rank{rank}.copy{copy}.jsonl"), "a") as log:
        result = JsonResult(log)
        for module in job["modules"]:
            result.emit(module=module, event="start")
            try:
                suite = unittest.defaultTestLoader.loadTestsFromName(module)
            except Exception:  # an import error is that module's result
                result.emit(test=f"{module}.<import>", outcome="error", detail=traceback.format_exc()[-2000:])
            else:
                without(suite, skip).run(result)
            result.emit(module=module, event="end")


if __name__ == "__main__":
    main()
