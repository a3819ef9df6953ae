"""Writing a benchmark's results: a Markdown file under bench/results/, with a
line saying when, where and by which script it was measured."""

from __future__ import annotations

import os
import platform
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
