"""Process ids under copies (preload/core/echo_pid.c): a copy's program reads its representative's pid, as GROMACS
does for its log and, through the log's checksum, its checkpoints; where it hands the id back to the kernel (kill,
/proc/<pid>/...) it acts on itself, never on its representative."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.sdc import read_events
from tests.conftest import compile_programs, copy_output, echorun, lines_by_rank, mpirun_native

OPENMPI4 = Path("/usr/bin/mpicc.openmpi")


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


def clean_under_copies(mpi, cmd: list[str], tmp_path: Path) -> tuple[dict[int, list[str]], Path, Path]:
    """`cmd DIR` natively on 2 ranks, then under 2 copies and --sdc detect with that MPI: exit 0, SDC clean (its
    messages and its files), a native run's output, every copy's output its representative's.  The native output
    by rank, the work directory and the run directory."""
    native_dir = tmp_path / "native"
    native_dir.mkdir()
    native = mpirun_native(mpi, 2, [*cmd, str(native_dir)])
    assert native.returncode == 0, native.stderr
    expected = lines_by_rank(native.stdout)
    work = tmp_path / "work"
    work.mkdir()
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *cmd, str(work)], run, timeout=300,
                env={"ECHO_MPICC": mpi.mpicc})
    assert r.returncode == 0, r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr, r.stderr
    assert read_events(run) == []
    assert lines_by_rank(r.stdout) == expected
    for rank in expected:
        assert lines_by_rank(copy_output(run, rank, 1)) == {rank: expected[rank]}
    return expected, work, run


def own_files(run: Path, rank: int, work: Path) -> dict[str, bytes]:
    """What copy 1 of `rank` wrote in `work`, in its file view."""
    return files(run / "fileview" / f"rank{rank}.copy1" / str(work).lstrip("/"))


def pid_app_is_clean(mpi, cmd: list[str], tmp_path: Path) -> None:
    expected, work, run = clean_under_copies(mpi, cmd, tmp_path)
    assert expected[0][1] == "r0: one process id: yes; main thread: yes; process group leader: yes; named itself: yes"
    assert expected[0][2] == "r0: signals sent to itself: 3, handled: 3"  # so is every copy's (its own signals)
    real = files(work)
    assert sorted(real) == ["md.0.log", "md.1.log", "state.0.cpt", "state.1.cpt"]
    assert b"signals handled: 3\n" in real["md.0.log"]  # no copy signalled its representative
    for rank in (0, 1):
        assert own_files(run, rank, work) == {name: data for name, data in real.items() if f".{rank}." in name}


def test_a_copy_reads_its_representatives_pid_and_signals_itself(mpi, programs, tmp_path):
    """On Open MPI 5: the log header's pid, the checkpoint's checksum of the log and the pid rank 0 sends are the
    representative's in every copy (before: a copy's own pid, exit 20 on a clean run: the message and both files
    diverged); kill(getpid(), SIGUSR1), /proc/<pid>/comm and /proc/<pid>/status act on the copy itself."""
    pid_app_is_clean(mpi, programs["pid_app"], tmp_path)


def test_a_copy_reads_its_representatives_pid_on_open_mpi_4(tmp_path):
    """The same on Debian's Open MPI 4.1, the MPI of Debian's GROMACS."""
    if not OPENMPI4.exists():
        pytest.skip("Debian's Open MPI 4.1 (scripts/mpis.sh) is not installed")
    mpi = detect_mpi(str(OPENMPI4))
    (tmp_path / "bin").mkdir()
    (cmd,) = compile_programs(mpi, tmp_path / "bin", None, ["pid_app"]).values()
    pid_app_is_clean(mpi, cmd, tmp_path)


def test_a_python_copy_reads_its_representatives_pid(mpi, programs, tmp_path):
    """mpi4py: os.getpid() in the log and in a gather is the representative's in every copy (before: exit 20, the
    gather and the log diverged), os.kill(os.getpid(), SIGUSR1) signals the copy itself, /proc/<pid> is its own."""
    expected, work, run = clean_under_copies(mpi, programs["py_pid"], tmp_path)
    assert expected[1] == ["r1: total 3, signals handled 1, /proc/<pid> is mine: True"]
    for rank in (0, 1):
        assert own_files(run, rank, work) == {f"py.{rank}.log": (work / f"py.{rank}.log").read_bytes()}


def test_a_fortran_copy_reads_its_representatives_pid_on_open_mpi_4(tmp_path):
    """gfortran's GETPID on Debian's Open MPI 4.1: the log's pid, the gathered pids and a scratch file named by the
    pid (status='new', then deleted) are the representative's in every copy, in the copy's own file view (before:
    exit 20, the gather and the logs diverged)."""
    if not OPENMPI4.exists() or not shutil.which("mpifort.openmpi"):
        pytest.skip("Debian's Open MPI 4.1 with mpifort (scripts/mpis.sh) is not installed")
    mpi = detect_mpi(str(OPENMPI4))
    (tmp_path / "bin").mkdir()
    (cmd,) = compile_programs(mpi, tmp_path / "bin", None, ["f_pid"]).values()
    _, work, run = clean_under_copies(mpi, cmd, tmp_path)
    assert sorted(files(work)) == ["run.0.log", "run.1.log"]  # every scratch file deleted, the copies' too
    for rank in (0, 1):
        assert own_files(run, rank, work) == {f"run.{rank}.log": (work / f"run.{rank}.log").read_bytes()}
