"""One-sided communication under copies (preload/clone/echo_win.c, docs/rma.md), end to end with the battery's
rma program: a Put to a rank reaches every copy of it while copies issue no RMA operation themselves; only
changed pages of window memory travel; the SDC check covers data that puts carry."""

from __future__ import annotations

import pytest

from echo.runformat.runfiles import plan_procs
from echo.sdc import EXIT_DIVERGED, read_events
from echo.store.ingest import read_metrics
from tests.conftest import Result, copy_output, echorun, lines_by_rank, mpirun_native

COPIES = 3


def metric_totals(run_dir, name: str) -> dict[tuple[int, int], float]:
    """(app rank, copy) -> the sum of a metric over the windows that process freed."""
    return {(app, copy): sum(v for n, v, _ in read_metrics(run_dir, real) if n == name)
            for real, app, copy, _ in plan_procs(run_dir)}


def line(lines: list[str], prefix: str) -> list[str]:
    """The words after `prefix` in the one line that starts with it."""
    (found,) = [x for x in lines if x.startswith(prefix)]
    return found[len(prefix):].split()


@pytest.fixture(scope="module")
def run(programs, tmp_path_factory) -> Result:
    r = echorun(["--no-store", "-n", "2", "--clones", str(COPIES), *programs["rma"]],
                tmp_path_factory.mktemp("rma") / "run")
    assert r.returncode == 0, r.stderr
    return r


def test_a_put_reaches_every_copy_of_its_target(mpi, programs, run):
    native = lines_by_rank(mpirun_native(mpi, 2, programs["rma"]).stdout)
    reps = lines_by_rank(run.stdout)
    for copy in range(COPIES):
        out = reps[1] if copy == 0 else lines_by_rank(copy_output(run.run_dir, 1, copy))[1]
        # rank 0 put its rank (0) into slot 0 of rank 1 in a fence epoch, 1000 into slot 6 under an exclusive lock
        assert line(out, "r1: fence mem ")[0] == "0"
        assert line(out, "r1: exclusive mem ")[6] == "1000"
        # rank 1 stored 0 into its slot 12, rank 0 put the old value back before the next forward
        assert line(out, "r1: restored mem ")[12] == "112"
        # the memory printed after each epoch is the native run's, on every copy
        assert [x for x in out if " mem " in x] == [x for x in native[1] if " mem " in x]
        # both ranks accumulated into rank 1 once each: copies added nothing
        assert line(out, "r1: accumulated total ")[0] == f"{3 * sum(range(1000)):.1f}"
    for copy in range(1, COPIES):  # and every copy of the origin saw the same get results
        gets = [x for x in lines_by_rank(copy_output(run.run_dir, 0, copy))[0] if " got " in x]
        assert gets == [x for x in reps[0] if " got " in x] == [x for x in native[0] if " got " in x]


def test_copies_issue_no_rma_operation(run):
    issued = metric_totals(run.run_dir, "rma operations issued")
    assert sorted(issued) == [(app, copy) for app in range(2) for copy in range(COPIES)]
    for (app, copy), n in issued.items():
        assert (n > 0) if copy == 0 else (n == 0), (app, copy, n)


def test_only_changed_pages_travel(run):
    exposed = metric_totals(run.run_dir, "rma window bytes at forwards")
    sent = metric_totals(run.run_dir, "rma window bytes sent")
    for key in exposed:
        assert 0 < sent[key] < exposed[key]
        assert sent[key] == sent[key[0], 0], "a copy receives what its representative sends"


def test_sdc_checks_the_data_of_puts(programs, tmp_path):
    clean = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs["rma"]],
                    tmp_path / "clean")
    # the dynamic window's addresses the ranks allgather are each process's own: no divergence (docs/sdc.md,
    # addresses; before that, both copies' MPI_Allgather was flagged in every clean run)
    assert clean.returncode == 0 and read_events(tmp_path / "clean") == [], clean.stderr
    # rank 1's first call that carries data out is its first MPI_Put
    flipped = echorun(["--no-store", "--sdc", "detect", "--inject", "bitflip:rank=1,copy=1,call=1", "-n", "2",
                       "--clones", "2", *programs["rma"]], tmp_path / "flipped")
    assert flipped.returncode == EXIT_DIVERGED
    div = [(e.app_rank, e.copy, e.function) for e in read_events(tmp_path / "flipped") if e.kind == "divergence"]
    assert div[0] == (1, 1, "MPI_Put")
