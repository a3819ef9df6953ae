"""Shared fixtures: the MPI of this machine, the test programs compiled once,
and helpers that run a program natively (mpirun) and under echorun."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from echo.build import detect_mpi

PROGRAMS = Path(__file__).parent / "programs"
RANK_LINE = re.compile(r"^r(\d+): ")
VENV_BIN = Path(sys.executable).parent


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    run_dir: Path


@pytest.fixture(scope="session")
def mpi():
    return detect_mpi()


@pytest.fixture(scope="session")
def programs(mpi, tmp_path_factory) -> dict[str, list[str]]:
    """Command line of every test program, by name (C and C++ compiled once)."""
    out = tmp_path_factory.mktemp("bin")
    cmds: dict[str, list[str]] = {}
    for src in sorted(PROGRAMS.iterdir()):
        if src.suffix in (".c", ".cpp"):
            compiler = mpi.mpicc if src.suffix == ".c" else str(Path(mpi.mpicc).parent / "mpicxx")
            exe = out / src.stem
            subprocess.run([compiler, "-O1", "-g", f"-I{PROGRAMS}", "-o", str(exe), str(src)], check=True)
            cmds[src.stem] = [str(exe)]
        elif src.suffix == ".py":
            cmds[src.stem] = [sys.executable, str(src)]
    return cmds


def mpirun_native(mpi, n: int, cmd: list[str], timeout: float = 120) -> Result:
    argv = [mpi.mpirun, "-n", str(n), "--oversubscribe"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    p = subprocess.run(argv + cmd, capture_output=True, text=True, timeout=timeout)
    return Result(p.returncode, p.stdout, p.stderr, Path())


def echorun(args: list[str], run_dir: Path, timeout: float = 120, env: dict[str, str] | None = None) -> Result:
    argv = [str(VENV_BIN / "echorun"), "--run-dir", str(run_dir), *args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    return Result(p.returncode, p.stdout, p.stderr, run_dir)


def lines_by_rank(text: str) -> dict[int, list[str]]:
    """Program output lines grouped by the rank that printed them ("rK: ...")."""
    out: dict[int, list[str]] = {}
    for line in text.splitlines():
        m = RANK_LINE.match(line)
        assert m, f"unexpected output line {line!r}"
        out.setdefault(int(m.group(1)), []).append(line)
    return out


def copy_output(run_dir: Path, rank: int, copy: int) -> str:
    return (run_dir / "output" / f"rank{rank}.copy{copy}.out").read_text()
