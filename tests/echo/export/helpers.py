"""Running `mpiecho export` as a user does."""

import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def mpiecho(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mpiecho"), *args], capture_output=True, text=True, timeout=300)


def calls_per_track(rows: dict) -> dict[tuple[int, int], dict[str, int]]:
    """(rank, copy) -> function -> calls, from the store's call summaries."""
    out: dict[tuple[int, int], dict[str, int]] = {}
    for c in rows["CallSummary"]:
        out.setdefault((c.app_rank, c.copy), {})[c.function] = c.calls
    return out


def export(db: str, run_id: str, fmt: str, out: Path) -> subprocess.CompletedProcess:
    """`mpiecho export RUN --format FMT --output OUT`, which must succeed."""
    r = mpiecho("export", run_id, "--db", db, "--format", fmt, "--output", str(out))
    assert r.returncode == 0, r.stderr
    return r
