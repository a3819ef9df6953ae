"""Neighbourhood collectives and the SDC check: what a copy contributes is
compared block by block with its representative's, except what MPI never sends
(blocks for MPI_PROC_NULL neighbours, gaps), where the topo program leaves each
process's pid. The battery (test_replication.py) checks the outputs."""

from __future__ import annotations

import pytest

from echo.runformat.records import read_run
from echo.sdc import EXIT_DIVERGED, read_events
from tests.conftest import echorun


@pytest.mark.parametrize(("mode", "copies"), [("stop", 2), ("vote", 3)])
def test_unsent_blocks_are_not_compared(programs, tmp_path, mode, copies):
    r = echorun(["--no-store", "--sdc", mode, "-n", "2", "--clones", str(copies), *programs["topo"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert list(read_events(tmp_path / "run")) == []
    assert f"SDC ({mode}): clean; exit status 0" in r.stderr


@pytest.mark.parametrize("function", ["MPI_Neighbor_alltoallw", "MPI_Ineighbor_alltoallv", "MPI_Neighbor_allgather"])
def test_a_corrupted_contribution_is_caught_at_its_call(programs, tmp_path, function):
    """The first call of `function` (numbered from a clean run) gets a flipped bit in copy 1 of rank 1."""
    clean = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["topo"]], tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    (rec,) = [f for f in read_run(tmp_path / "clean") if (f.app_rank, f.copy) == (1, 1)]
    call = int(list(rec.function_names()).index(function))
    r = echorun(["--no-store", "--sdc", "detect", "--inject", f"bitflip:rank=1,copy=1,call={call}", "-n", "2",
                 "--clones", "2", *programs["topo"]], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    div = [e for e in read_events(tmp_path / "run") if e.kind == "divergence"]
    assert [(e.app_rank, e.copy, e.function, e.call) for e in div] == [(1, 1, function, call)]
