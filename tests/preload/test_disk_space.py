"""A file system's free space read by the program (statfs, statvfs; preload/core/echo_clock.c): copies read their
representative's, as they do its clocks, so a code that sizes its scratch files by it runs as natively."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from echo.sdc import read_events
from tests.conftest import copy_output, echorun, lines_by_rank


def test_scratch_space_reduced_is_the_representatives(programs, tmp_path):
    """NWChem-like scratch sizing: each rank writes a probe file in its scratch directory, reads the free space
    (fstatvfs on the probe, statfs on the directory) and the job reduces the least.  A copy's probe is in its file
    view, here on another file system (the run directory in /dev/shm): its own reading differed from its
    representative's in every field, and --sdc detect flagged the MPI_Allreduce; now it reads the
    representative's, the run is clean, and every copy prints its representative's lines."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    run = Path(tempfile.mkdtemp(prefix="echo-test-disk-", dir="/dev/shm")) / "run"
    try:
        r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs["scratch_space"],
                     str(scratch)], run)
        assert r.returncode == 0, r.stderr
        assert "SDC (detect): clean; exit status 0" in r.stderr, r.stderr
        assert read_events(run) == []
        reps = lines_by_rank(r.stdout)
        assert any("MiB per process" in line for line in reps[0]), r.stdout
        for rank in (0, 1):
            assert lines_by_rank(copy_output(run, rank, 1)) == {rank: reps[rank]}
    finally:
        shutil.rmtree(run.parent, ignore_errors=True)
