"""Building the preload library: real mpicc, real cache."""

import os
import re
import subprocess

import pytest

from echo.build import BuildError, detect_mpi, ensure_library, find_mpicc


def test_builds_once_then_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ECHO_CACHE", str(tmp_path))
    lib = ensure_library()
    assert lib.is_file() and lib.parent.parent == tmp_path
    said = capsys.readouterr().err  # the ~20 s of the first build are explained, in one line
    assert said.count("\n") == 1 and "compiling echo's preload library" in said and str(tmp_path) in said
    mtime = lib.stat().st_mtime_ns
    assert ensure_library() == lib and lib.stat().st_mtime_ns == mtime
    assert capsys.readouterr().err == ""


def test_every_mpi_function_is_wrapped(tmp_path, monkeypatch):
    """The library defines every MPI_ function mpi.h declares (not one missing)."""
    monkeypatch.setenv("ECHO_CACHE", str(tmp_path))
    lib = ensure_library()
    wrappers = (lib.parent / "wrappers.c").read_text()
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True)
    defined = {line.split()[-1] for line in symbols.stdout.splitlines() if " T MPI_" in line}
    # Fortran's entry points (void, or MPI_WTIME in capitals) are not C functions
    wrapped = {n for n in re.findall(r"^ECHO_PUBLIC (?!void )\w+ (MPI_\w+)\(", wrappers, re.M) if n != n.upper()}
    header = subprocess.run([detect_mpi().mpicc, "-E", "-P", "-x", "c", "-"], input="#include <mpi.h>\n",
                            capture_output=True, text=True, check=True).stdout
    declared = set(re.findall(r"\b(MPI_\w+)\s*\([^;{]*\)\s*(?:__attribute__\(\([^;]*?\)\)\s*)*;", header))
    assert len(declared) > 400
    assert declared == wrapped
    assert declared <= defined
    assert "MPI_Send" in defined and "MPI_File_open" in defined and "MPI_Win_create" in defined
    assert not any(s.startswith("echo_MPI_") for s in defined), "internal semantics stay hidden"


def test_no_mpicc_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ECHO_MPICC", str(tmp_path / "missing-mpicc"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.prefix", str(tmp_path))
    with pytest.raises(BuildError, match="no mpicc found.*ECHO_MPICC"):
        find_mpicc()


def test_broken_mpicc_is_a_clear_error(tmp_path, monkeypatch):
    fake = tmp_path / "mpicc"
    fake.write_text("#!/bin/sh\necho 'mpi.h: No such file' >&2\nexit 1\n")
    fake.chmod(0o755)
    (tmp_path / "mpirun").write_text("#!/bin/sh\n")
    (tmp_path / "mpirun").chmod(0o755)
    with pytest.raises(BuildError, match="cannot compile '#include <mpi.h>'"):
        detect_mpi(str(fake))


def test_identity_follows_the_mpi(tmp_path):
    real = detect_mpi()
    assert real.flavor == "openmpi" and os.path.basename(real.mpirun) in ("mpirun", "mpiexec")


def test_mpirun_of_the_mpicc_s_own_mpi(tmp_path):
    """Debian's alternatives: /usr/bin/mpicc -> /etc/alternatives/mpi -> mpicc.mpich goes with mpirun.mpich,
    whatever the plain mpirun points to; an mpicc with no suffix takes the mpirun beside it."""
    from echo.build import find_mpirun

    bindir, alternatives = tmp_path / "bin", tmp_path / "alternatives"
    bindir.mkdir()
    alternatives.mkdir()
    for name in ("mpicc.mpich", "mpirun.mpich", "mpicc.openmpi", "mpirun.openmpi"):
        (bindir / name).write_text("#!/bin/sh\n")
    (alternatives / "mpi").symlink_to(bindir / "mpicc.mpich")
    (alternatives / "mpirun").symlink_to(bindir / "mpirun.openmpi")
    (bindir / "mpicc").symlink_to(alternatives / "mpi")
    (bindir / "mpirun").symlink_to(alternatives / "mpirun")
    assert find_mpirun(str(bindir / "mpicc")) == str(bindir / "mpirun.mpich")
    assert find_mpirun(str(bindir / "mpicc.openmpi")) == str(bindir / "mpirun.openmpi")
    (bindir / "mpicc_abi").write_text("#!/bin/sh\n")
    assert find_mpirun(str(bindir / "mpicc_abi")) == str(bindir / "mpirun")
