"""Writing a benchmark's results: a Markdown file under bench/results/, with a
line saying when, where and by which script it was measured; timing a command,
and running commands at once."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def measured_by(script: str) -> str:
    return f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.node()} ({os.cpu_count()} cores) by `{script}`"


def write(name: str, lines: list[str]) -> Path:
    """Write bench/results/<name>.md, print it and return its path."""
    path = RESULTS_DIR / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print(path.read_text())
    return path


def timed(argv: list[str]) -> float:
    """Wall seconds of a command that must succeed."""
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[:8]}: {p.stderr[-1500:]}")
    return time.perf_counter() - t


def run_together(argvs: list[list[str]], timeout: float = 1800) -> list[str]:
    """Start every command at once; their standard outputs (each must succeed)."""
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in argvs]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{p.args[:6]} failed:\n{err[-2000:]}")
        outs.append(out)
    return outs
