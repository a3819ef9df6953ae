"""What the system says about itself and changes by itself, read by the program: a file system's free space
(statfs, statvfs; preload/core/echo_clock.c) and /proc's memory files (preload/core/echo_fileview.c).  Copies read
their representative's, as they do its clocks, so a code that sizes its scratch by them or reduces them runs as
natively and is SDC clean."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.sdc import read_events
from tests.conftest import compile_programs, copy_output, echorun, lines_by_rank

OPENMPI4 = Path("/usr/bin/mpicc.openmpi")


def run_clean_on_openmpi4(name: str, tmp_path: Path, printed: str, ranks_printing: tuple[int, ...]) -> None:
    """Test program `name` on Debian's Open MPI 4.1 under 2 copies and --sdc detect: exit 0, SDC clean, no event,
    rank 0's representative printed a line with `printed`, and the copy of each rank in `ranks_printing` printed
    its representative's lines."""
    mpi = detect_mpi(str(OPENMPI4))
    (cmd,) = compile_programs(mpi, tmp_path, None, [name]).values()
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *cmd], run, timeout=300,
                env={"ECHO_MPICC": mpi.mpicc})
    assert r.returncode == 0, r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr, r.stderr
    assert read_events(run) == []
    reps = lines_by_rank(r.stdout)
    assert any(printed in line for line in reps[0]), r.stdout
    for rank in ranks_printing:
        assert lines_by_rank(copy_output(run, rank, 1)) == {rank: reps[rank]}


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


def test_memory_report_from_proc_is_the_representatives(tmp_path):
    """CP2K's memory report, in Fortran on Debian's Open MPI 4.1: /proc/meminfo and /proc/self/statm read with
    stream access, their fields reduced (min, max, sum) and the resident size with max.  The machine's free memory
    changes between the representative's read and a copy's, and a copy's resident size is its own (its MPI maps
    less): --sdc detect flagged the MPI_Allreduce calls; now a copy reads the representative's snapshot of each
    file, the run is clean, and every copy prints its representative's lines.  /proc/meminfo is opened as CP2K
    opens it, without ACTION=: gfortran opens it for reading and writing when it may, as root may, and the
    snapshot was taken for opens for reading only, so CP2K's copies read their own free memory (exit 20 on every
    run as root); under another user gfortran falls back to reading only."""
    if not OPENMPI4.exists() or not shutil.which("mpifort.openmpi"):
        pytest.skip("Debian's Open MPI 4.1 with mpifort (scripts/mpis.sh) is not installed")
    run_clean_on_openmpi4("f_meminfo", tmp_path, "peak process memory", ranks_printing=(0,))  # rank 0 reports


def test_hardware_detection_with_hwloc_after_init_stays_in_step(tmp_path):
    """GROMACS's hardware detection, on Debian's Open MPI 4.1: after MPI_Init each rank loads hwloc's topology
    with its I/O devices (libudev checks with fstatfs that /sys is sysfs: on the representative only) and the
    ranks reduce the cores found.  The representative's fstatfs went to its copies as a reading none of them made,
    and each copy parted from its representative at the MPI_Allreduce (exit 20); now the reading is libudev's, not
    the program's: the run is clean and every copy prints its representative's lines."""
    if not OPENMPI4.exists() or not Path("/usr/include/hwloc.h").exists():
        pytest.skip("Debian's Open MPI 4.1 and hwloc's headers (libhwloc-dev, scripts/mpis.sh) are not installed")
    run_clean_on_openmpi4("hw_topology", tmp_path, "processing units on every rank", ranks_printing=(0, 1))
