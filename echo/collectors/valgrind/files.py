"""Where the Valgrind tools write: a file per copy and tool in the run directory's valgrind/ folder."""

from __future__ import annotations

from pathlib import Path

from echo.runformat import runfiles

TOOLS = ("memcheck", "cachegrind", "callgrind", "massif", "helgrind", "drd")


FOLDER = "valgrind"  # the run directory's folder of the tools' files, a file per copy (runfiles.copy_file)


def output_file(run_dir: str | Path, rank: int, copy: int, tool: str, ext: str) -> Path:
    """A tool's file of one copy: what = "memcheck.xml", "callgrind.out", "memcheck.log", ..."""
    return runfiles.copy_file(run_dir, FOLDER, rank, copy, f"{tool}.{ext}")
