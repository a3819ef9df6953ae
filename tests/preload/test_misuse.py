"""A program that misuses MPI (with MPI_ERRORS_RETURN) gets under echo the error
class it gets natively, on every copy, and goes on working: no crash inside
echo, no copy that returns success where MPI refused the call."""

from __future__ import annotations

import pytest

from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native


@pytest.mark.parametrize("copies", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 2])
def test_misuse_error_classes(mpi, programs, tmp_path, n, copies):
    native = mpirun_native(mpi, n, programs["misuse"])
    assert native.returncode == 0, native.stderr
    expected = lines_by_rank(native.stdout)
    # the program really misuses MPI: the native run reports errors of the classes it aims at
    classes = {line.rsplit(" ", 1)[1] for line in expected[0] if " class " in line}
    assert {"2", "3", "4", "5", "6", "8", "15"} <= classes, expected[0]

    r = echorun(["--no-store", "-n", str(n), "--clones", str(copies), *programs["misuse"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    reps = lines_by_rank(r.stdout)
    assert reps == expected
    for rank in range(n):
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(r.run_dir, rank, copy)) == {rank: expected[rank]}
