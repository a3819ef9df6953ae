"""MPI-IO under cloning, end to end (the battery's test_replication runs the io
program at every size; these check what output alone cannot show): only
representatives touch files, so the files a run with copies leaves are the
native run's byte for byte; misuse fails with the error classes of a native run;
independent worlds write files of their own; --sdc checks file writes."""

from __future__ import annotations

from pathlib import Path

from echo.sdc import EXIT_DIVERGED, read_events
from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native

KEPT = ["f.data", "f.view"]  # what `io PREFIX` leaves; it deletes every other file it makes

MISUSE = {
    "open a missing file": "MPI_ERR_NO_SUCH_FILE",
    "open RDONLY|RDWR": "MPI_ERR_AMODE",
    "delete a missing file": "MPI_ERR_NO_SUCH_FILE",
    "read MPI_FILE_NULL": "MPI_ERR_FILE",
    "read a write-only file": "MPI_ERR_ACCESS",
    "iread a write-only file": "MPI_ERR_ACCESS, request untouched 1",
    'set_view with datarep "nonsense"': "MPI_ERR_UNSUPPORTED_DATAREP",
    "write a read-only file": "MPI_ERR_READ_ONLY",
    "with a handler, read": "MPI_ERR_ACCESS, handler called 1 times with MPI_ERR_ACCESS, handler is ours 1",
    "call_errhandler": "called 2 times with MPI_ERR_IO",
}


def run_native(mpi, programs, prefix: Path, n: int = 2) -> dict[int, list[str]]:
    prefix.parent.mkdir()
    r = mpirun_native(mpi, n, [*programs["io"], str(prefix)])
    assert r.returncode == 0, r.stderr
    return lines_by_rank(r.stdout)


def misuse_lines(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        text = line.split(": ", 1)[1]
        for what in MISUSE:
            if text.startswith(what + ": "):
                out[what] = text[len(what) + 2:]
    return out


def test_copies_write_nothing(mpi, programs, tmp_path):
    """With 3 copies the files are the native run's: copies wrote nothing of their
    own, and no stand-in file of theirs is left behind."""
    run_native(mpi, programs, tmp_path / "native" / "f")
    (tmp_path / "echo").mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", "3", *programs["io"], str(tmp_path / "echo" / "f")],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == KEPT
    assert sorted(p.name for p in (tmp_path / "echo").iterdir()) == KEPT
    for name in KEPT:
        assert (tmp_path / "echo" / name).read_bytes() == (tmp_path / "native" / name).read_bytes(), name
    assert list((tmp_path / "run" / "scratch").iterdir()) == [], "the copies' stand-ins are deleted on close"


def test_misuse_gives_the_native_error_classes(mpi, programs, tmp_path):
    native = run_native(mpi, programs, tmp_path / "native" / "f")
    (tmp_path / "echo").mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["io"], str(tmp_path / "echo" / "f")],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    reps = lines_by_rank(r.stdout)
    for rank in range(2):
        assert misuse_lines(native[rank]) == MISUSE
        assert misuse_lines(reps[rank]) == MISUSE
        assert misuse_lines(lines_by_rank(copy_output(r.run_dir, rank, 1))[rank]) == MISUSE


def test_independent_worlds_write_files_of_their_own(mpi, programs, tmp_path):
    """Copy k > 0 of every rank is its world's representative and writes PREFIX.*.copy<k>."""
    run_native(mpi, programs, tmp_path / "native" / "f")
    (tmp_path / "echo").mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--worlds", "independent", "--perturb",
                 "jitter:max=10us", *programs["io"], str(tmp_path / "echo" / "f")], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "echo").iterdir()) == sorted(KEPT + [f"{k}.copy1" for k in KEPT])
    for name in KEPT:
        expected = (tmp_path / "native" / name).read_bytes()
        assert (tmp_path / "echo" / name).read_bytes() == expected, name
        assert (tmp_path / "echo" / f"{name}.copy1").read_bytes() == expected, name


def test_sdc_checks_file_writes(programs, tmp_path):
    """A bit flipped in a copy's buffer before its first file write stops the job there (--sdc stop)."""
    (tmp_path / "echo").mkdir()
    r = echorun(["--no-store", "--sdc", "stop", "--inject", "bitflip:rank=1,copy=1,call=0", "-n", "2", "--clones",
                 "2", *programs["io"], str(tmp_path / "echo" / "f")], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    (div,) = [e for e in read_events(tmp_path / "run") if e.kind == "divergence"]
    assert (div.app_rank, div.copy, div.function, div.first_byte) == (1, 1, "MPI_File_write_at", 0)
