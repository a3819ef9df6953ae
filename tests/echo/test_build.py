"""Building the preload library: real mpicc, real cache."""

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from echo import __version__
from echo.build import BuildError, detect_mpi, ensure_library, find_mpicc, find_mpirun
from echo.resources import PACKAGE


def test_builds_once_then_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ECHO_CACHE", str(tmp_path))
    lib = ensure_library()
    assert lib.is_file() and lib.parent.parent == tmp_path
    # the 20-60 s of the first build are said in two lines (no spinner: a log keeps them as they are): when it
    # starts, naming the MPI, that it is once per MPI and why it is long, and when it ends, with the time it took
    start, end = capsys.readouterr().err.splitlines()
    name = detect_mpi().name
    assert start.startswith(f"echo: building echo's library for {name} (") and "once per MPI" in start
    assert "usually 20-60 s, as it compiles a wrapper for every MPI function" in start
    assert str(tmp_path) in start
    assert re.fullmatch(rf"echo: built echo's library for {re.escape(name)} in \d+\.\d s: {re.escape(str(lib))}", end)
    mtime = lib.stat().st_mtime_ns
    assert ensure_library() == lib and lib.stat().st_mtime_ns == mtime
    assert capsys.readouterr().err == ""  # a cached library says nothing


def _echo_copy(tmp_path: Path, change: Callable[[Path], None]) -> Path:
    """A copy of echo's Python package and the library's sources (as another version installs them), changed."""
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "echo",
                    ignore=shutil.ignore_patterns("__pycache__"))  # echo/preload: the files, as a wheel has them
    change(src)
    return src


def _library_of(src: Path) -> tuple[dict, str]:
    """What the copy of echo at `src` finds, in a Python of its own: its version, the library's cached path, and
    ensure_library's answer when that path is built already; and what it said."""
    code = ("import json, echo; from echo.build import detect_mpi, ensure_library, library_path; mpi = detect_mpi(); "
            "lib = library_path(mpi); print(json.dumps({'version': echo.__version__, 'file': echo.__file__, "
            "'lib': str(lib), 'ensured': str(ensure_library(mpi)) if lib.is_file() else None}))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=src,
                       env=dict(os.environ, PYTHONPATH=str(src)))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), p.stderr


def test_another_version_of_echo_reuses_the_library(tmp_path):
    """A release that changes none of the library's sources finds the library the last one built: no compile."""
    lib = ensure_library()  # this checkout's (built once, in the shared cache)

    def new_version(src: Path) -> None:
        init = src / "echo" / "__init__.py"
        init.write_text(init.read_text().replace(f'__version__ = "{__version__}"', '__version__ = "99.0.0"'))

    found, said = _library_of(_echo_copy(tmp_path, new_version))
    assert found["version"] == "99.0.0" and found["file"].startswith(str(tmp_path))  # the copy ran, not this echo
    assert found["lib"] == found["ensured"] == str(lib)
    assert "building" not in said and said == ""


def test_a_changed_source_is_another_library(tmp_path):
    """Any edit of a source of the library (here a comment in core) is a new entry of the cache: it is built."""
    lib = ensure_library()

    def edit(src: Path) -> None:
        with open(src / "echo" / "preload" / "core" / "echo_process.c", "a") as f:
            f.write("/* edited */\n")

    found, _ = _library_of(_echo_copy(tmp_path, edit))
    assert found["file"].startswith(str(tmp_path)) and found["lib"] != str(lib)
    assert Path(found["lib"]).parent.name.split("-")[1] == lib.parent.name.split("-")[1]  # the same MPI's identity


def test_the_compiler_behind_mpicc_is_in_the_key(tmp_path, monkeypatch):
    """The same mpicc and mpi.h with another compiler behind it (here cc on PATH, which Open MPI's wrapper runs,
    with a flag that changes the code it makes) is another MPI identity: its library is built again."""
    real = detect_mpi()
    if subprocess.run([real.mpicc, "--showme"], capture_output=True, text=True).stdout.split()[:1] != ["cc"]:
        pytest.skip("this mpicc does not run cc from PATH")
    shim = tmp_path / "cc"
    shim.write_text(f"#!/bin/sh\nexec {shutil.which('cc')} -ffast-math \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    other = detect_mpi(real.mpicc)
    assert other.name == real.name and other.identity != real.identity
    monkeypatch.setenv("PATH", os.environ["PATH"].split(":", 1)[1])
    assert detect_mpi(real.mpicc).identity == real.identity  # the key is stable for the same compiler


def _detect_with_logging_mpicc(bindir: Path, cache: Path) -> tuple[str, list[str]]:
    """detect_mpi in a Python of its own with bindir's mpicc; its identity, and the commands that mpicc ran."""
    log = bindir / "calls.log"
    before = log.read_text().splitlines() if log.is_file() else []
    code = "from echo.build import detect_mpi; m = detect_mpi(); print(m.identity, m.name)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, ECHO_MPICC=str(bindir / "mpicc"), ECHO_CACHE=str(cache)))
    assert p.returncode == 0, p.stderr
    after = log.read_text().splitlines() if log.is_file() else []
    return p.stdout.strip(), after[len(before):]


def test_the_mpi_is_detected_once_until_its_headers_change(tmp_path):
    """What the MPI's preprocessor said of it is kept: a second echo asks its mpicc nothing (three programs less
    for every echorun), and gets the same identity; a header it read that changes (here an mpi.h of the site's,
    in front of the MPI's own, as some clusters add one) is detected again, and is another identity."""
    real = os.environ["ECHO_MPICC"]
    bindir, inc = tmp_path / "bin", tmp_path / "include"
    bindir.mkdir()
    inc.mkdir()
    (inc / "mpi.h").write_text("#include_next <mpi.h>\n#define SITE_MPI_PATCHLEVEL 1\n")
    (bindir / "mpicc").write_text(f'#!/bin/sh\necho "$*" >> {bindir / "calls.log"}\nexec {real} -I{inc} "$@"\n')
    (bindir / "mpicc").chmod(0o755)
    (bindir / "mpirun").symlink_to(find_mpirun(real))
    for made in (inc / "mpi.h", bindir / "mpicc"):  # installed a while ago: a file written just now is not trusted
        os.utime(made, (made.stat().st_atime - 3600, made.stat().st_mtime - 3600))
    first, calls = _detect_with_logging_mpicc(bindir, tmp_path / "cache")
    assert sum(" -E " in f" {c} " for c in calls) == 2, calls  # mpi.h as preprocessed, and its macros
    again, calls = _detect_with_logging_mpicc(bindir, tmp_path / "cache")
    assert again == first and calls == []
    (inc / "mpi.h").write_text("#include_next <mpi.h>\n#define SITE_MPI_PATCHLEVEL 2\n")  # same size, new time
    changed, calls = _detect_with_logging_mpicc(bindir, tmp_path / "cache")
    assert len(calls) == 2 and changed.split()[0] != first.split()[0] and changed.split()[1:] == first.split()[1:]
    _, calls = _detect_with_logging_mpicc(bindir, tmp_path / "cache")  # changed just now: asked again, not trusted
    assert len(calls) == 2


def test_the_compiler_flags_are_in_the_key(monkeypatch):
    from echo import build

    before = build.source_hash()
    monkeypatch.setattr(build, "CFLAGS", [*build.CFLAGS, "-ffast-math"])
    assert build.source_hash() != before


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
    assert real.family.lineage == "Open MPI" and os.path.basename(real.mpirun) in ("mpirun", "mpiexec")


def test_mpirun_of_the_mpicc_s_own_mpi(tmp_path):
    """Debian's alternatives: /usr/bin/mpicc -> /etc/alternatives/mpi -> mpicc.mpich goes with mpirun.mpich,
    whatever the plain mpirun points to; an mpicc with no suffix takes the mpirun beside it."""
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
