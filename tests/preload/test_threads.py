"""Thread levels under copies (preload/core/echo_init_comm.c, echo_serial.c): a program gets the level it asks
for; calls made by one thread at a time, on whichever thread, stay in step with the representative; two threads
inside MPI at once stop the job, naming them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.sdc import read_events
from tests.conftest import PROGRAMS, copy_output, echorun, lines_by_rank, mpirun_native

OPENMPI_41 = Path("/usr/bin/mpicc.openmpi")  # Debian's Open MPI 4.1 (scripts/mpis.sh), as tests/portability pins it


def without_timers(lines: list[str]) -> list[str]:
    return [line for line in lines if "timers" not in line]


@pytest.mark.parametrize("mpicc", ["venv", "openmpi-4.1"])
def test_serialized_openmp_program_gets_its_level_and_stays_in_step(mpi, programs, tmp_path, mpicc):
    """An OpenMP code asking MPI_THREAD_SERIALIZED (it aborts with less) calls MPI from `omp single` and from each
    thread in turn and times on those threads: it gets SERIALIZED, prints what it prints natively, every copy prints
    its representative's lines (timers included), and SDC finds nothing."""
    env = None
    cmd = programs["omp_serialized"]
    if mpicc == "openmpi-4.1":
        if not OPENMPI_41.is_file():
            pytest.skip(f"Debian's Open MPI 4.1 is not installed ({OPENMPI_41} missing): scripts/mpis.sh installs it")
        mpi = detect_mpi(str(OPENMPI_41))
        exe = tmp_path / "omp_serialized"
        subprocess.run([str(OPENMPI_41), "-O1", "-fopenmp", "-o", str(exe), str(PROGRAMS / "omp_serialized.c")],
                       check=True)
        cmd, env = [str(exe)], {"ECHO_MPICC": str(OPENMPI_41)}
    native = mpirun_native(mpi, 2, cmd)
    assert native.returncode == 0, native.stderr
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *cmd], run, env=env)
    assert r.returncode == 0, r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr
    assert read_events(run) == []
    reps, expected = lines_by_rank(r.stdout), lines_by_rank(native.stdout)
    assert reps[0][0] == "r0: provided MPI_THREAD_SERIALIZED"
    for rank in (0, 1):
        assert without_timers(reps[rank]) == without_timers(expected[rank])
        assert lines_by_rank(copy_output(run, rank, 1)) == {rank: reps[rank]}


def test_two_threads_inside_mpi_at_once_stop_the_job_naming_them(mpi, programs, tmp_path):
    """Two threads of a rank with copies inside MPI_Recv at the same time (the program asked for, and got,
    MPI_THREAD_MULTIPLE; natively it runs to its end): the copies could match them in another order, so the job
    stops with a message naming both threads and their calls, never a hang nor a silent mismatch."""
    native = mpirun_native(mpi, 2, programs["omp_concurrent"])
    assert native.returncode == 0, native.stderr
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["omp_concurrent"]], tmp_path / "run")
    assert r.returncode != 0
    assert re.search(r"application rank 0 copy \d: thread \d+ called MPI_Recv while thread \d+ is inside MPI_Recv: "
                     r"with copies, MPI must be called by one thread at a time", r.stderr), r.stderr
    assert "does not support the requested level" not in r.stderr


def test_copy_keeps_readings_of_threads_that_time_while_thread_0_polls(mpi, programs, tmp_path):
    """Thread 0 polls MPI_Testany for a ring exchange while the other threads time every block they multiply with
    omp_get_wtime (DBCSR's overlap, under CP2K, MPI_THREAD_SERIALIZED): a copy's thread 0 steps over thousands of
    its representative's readings that its other threads have yet to make.  It keeps them all: no copy's clocks
    part for want of room (a fixed 64 parted CP2K's copy, whose path then parted and crashed inside echo), the run
    ends cleanly and each copy prints its representative's lines."""
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["omp_comm_thread"]], tmp_path / "run",
                env={"OMP_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    events = read_events(tmp_path / "run")
    assert [e.detail for e in events if "than a copy keeps" in e.detail] == []
    assert [e.detail for e in events if e.kind == "copy-parted"] == []
    reps = lines_by_rank(r.stdout)
    assert reps[0][-1] == "r0: done" and reps[1][-1] == "r1: done"
    for rank in (0, 1):
        assert lines_by_rank(copy_output(tmp_path / "run", rank, 1)) == {rank: reps[rank]}
