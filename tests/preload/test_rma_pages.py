"""Window memory under copies when writes are tracked (preload/clone/echo_dirty.c, docs/rma.md "Only written pages
are compared"): tests/programs/rma_pages.c changes a page, a few bytes and a put's int of 8 MiB windows in each
epoch (its own memory, MPI's, shared memory, two windows on one page) and prints a hash of the window after every
synchronization; a copy scribbles on a page its representative leaves alone.  A copy that missed a written page,
or kept its scribble, prints another hash than its representative."""

from __future__ import annotations

import pytest

from echo.runformat.runfiles import plan_procs
from echo.store.ingest import read_metrics
from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native

COMPARED_WHOLE = "RMA window memory is compared page by page"  # echo's note where tracking is off


@pytest.mark.parametrize("n", [2, 3])
def test_every_copy_holds_its_representatives_window(mpi, programs, tmp_path, n):
    native = mpirun_native(mpi, n, programs["rma_pages"])
    assert native.returncode == 0, native.stderr
    expected = lines_by_rank(native.stdout)
    r = echorun(["--no-store", "-n", str(n), "--clones", "2", *programs["rma_pages"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == expected
    for rank in range(n):
        assert lines_by_rank(copy_output(r.run_dir, rank, 1)).get(rank) == expected[rank], rank


def test_only_written_pages_are_compared(programs, tmp_path):
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["rma_pages"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    if COMPARED_WHOLE in r.stderr:
        pytest.skip(r.stderr[r.stderr.index(COMPARED_WHOLE):].splitlines()[0])
    for real, app, copy, _ in plan_procs(r.run_dir):
        metrics: dict[str, float] = {}
        for name, value, _ in read_metrics(r.run_dir, real):
            metrics[name] = metrics.get(name, 0) + value
        # each forward after the first looks at the pages written since the one before: a handful of the 2048
        # pages of each 8 MiB window (and the whole window once, after the program cleared MPI's memory)
        assert 0 < metrics["rma window bytes compared"] < metrics["rma window bytes at forwards"] / 10, (app, copy)


@pytest.mark.parametrize("clones", ["0=2", "1=2"])
def test_ranks_with_and_without_copies(mpi, programs, tmp_path, clones):
    """A window's collectives at creation and at MPI_Win_free are the representatives', with copies or not: a rank
    without copies once left them to those with copies, and the job hung."""
    expected = lines_by_rank(mpirun_native(mpi, 2, programs["rma_pages"]).stdout)
    r = echorun(["--no-store", "-n", "2", "--clones", clones, *programs["rma_pages"]], tmp_path / "run", timeout=90)
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == expected
    rank = int(clones.split("=")[0])
    assert lines_by_rank(copy_output(r.run_dir, rank, 1)).get(rank) == expected[rank]
