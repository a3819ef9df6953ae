"""Dynamic processes under copies: the representatives spawn the children once
(children run natively) and every copy sees what its representative saw."""

from __future__ import annotations

import pytest

from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native


@pytest.mark.parametrize("copies", [2, 3])
@pytest.mark.parametrize("n", [1, 2])
def test_spawn_under_copies(mpi, programs, tmp_path, n, copies):
    native = mpirun_native(mpi, n, programs["spawn"])
    assert native.returncode == 0, native.stderr
    # the children need slots of their own on this machine
    r = echorun(["-n", str(n), "--clones", str(copies), "--mpirun-args=--oversubscribe", *programs["spawn"]],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    reps = lines_by_rank(r.stdout)
    assert reps == lines_by_rank(native.stdout)
    assert "r0: children answered 70 71" in reps[0]
    for rank in range(n):
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(r.run_dir, rank, copy)) == {rank: reps[rank]}
