"""strace on copies: the copies named run under `strace -f`, which writes every system call they make (and their
children's) into the run directory, strace/rankR.copyC.strace; the store keeps each copy's count per system call,
`mpiecho report` and echorun say them, and a rank's page sets them side by side (pages.py).

A role that wraps copies in a tool is this folder and its line in echo/collectors/roles.py: its Wrap says the command
(echo/exec.sh runs it before the program) and the folder the tool writes in (made, kept, uploaded by
echo/runformat/runfiles.py).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from echo.collectors.role import Pages, Role, Section, Wrap
from echo.collectors.strace import pages
from echo.collectors.strace.stored import CALLS_OF, stored_counts
from echo.runformat import runfiles

FOLDER = "strace"  # the run directory's folder of its traces, a file per copy (runfiles.copy_file)
PROCESS_ROLE = "strace"  # the word the plan gives a traced copy


class StraceError(ValueError):
    """An --strace option that cannot be used; the message says how to fix it."""


def given(opts: Any) -> bool:
    return bool(opts.strace)


def chosen_copies(spec: str) -> list[int]:
    """The copies `--strace COPY,...` names."""
    try:
        copies = sorted({int(c) for c in spec.split(",") if c.strip()})
    except ValueError:
        raise StraceError(f"--strace {spec}: expected copy numbers, e.g. 1 or 1,2") from None
    if not copies or copies[0] < 0:
        raise StraceError(f"--strace {spec}: expected copy numbers (0 is the representative), e.g. 1")
    return copies


def assign(opts: Any, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> "strace" for every rank's copies that --strace names."""
    if not opts.strace:
        return {}
    out = {}
    for copy in chosen_copies(opts.strace):
        short = [rank for rank, n in enumerate(copies) if copy >= n]
        if short:
            raise StraceError(f"--strace {opts.strace}: rank {short[0]} has no copy {copy} (it has "
                              f"{copies[short[0]]}); raise --clones to {copy + 1}")
        out.update({(rank, copy): PROCESS_ROLE for rank in range(len(copies))})
    return out


def trace_file(run_dir: str | Path, rank: int, copy: int) -> Path:
    return runfiles.copy_file(run_dir, FOLDER, rank, copy, "strace")


def wrapped(opts: Any, copies: list[int], procs: list[Any], machine: Any) -> dict[int, list[str]]:
    """The command each traced process starts through, by real rank (Role.wrap). strace itself runs without echo's
    library (env -u), which it gives back to the program alone (-E): loaded in strace too, the library would take the
    rank's status and output files for the tracer. -E ECHO_RANK_PID: the program is strace's child, not the process
    the rank started as, and is the rank all the same."""
    traced = assign(opts, copies)
    if not traced:
        return {}
    if not machine.strace:
        raise StraceError("strace is not installed (apt-get install strace)")
    return {p.real: ["env", "-u", "LD_PRELOAD", machine.strace, "-f", "-o",
                     str(trace_file(opts.run_dir, p.app, p.copy)), "-E", f"LD_PRELOAD={machine.library}",
                     "-E", "ECHO_RANK_PID"]
            for p in procs if (p.app, p.copy) in traced}


def machine(mpirun: str) -> dict[str, Any]:
    """Machine's field for strace: its path (None: not installed)."""
    return {"strace": shutil.which("strace")}


# "1234 write(1, ..." or "1234 read(3,  <unfinished ...>": a call starts; "<... read resumed>" ends one (not counted)
_CALL = re.compile(r"^(?:\[pid\s+)?\d+\]?\s+([A-Za-z_][A-Za-z0-9_]*)\(")
_FAILED = re.compile(r"\)\s+= -1 [A-Z]")


def count_calls(path: Path) -> tuple[Counter[str], int]:
    """Every system call of a trace by name, and how many failed (returned -1 with an errno)."""
    calls: Counter[str] = Counter()
    failed = 0
    with open(path, errors="replace") as f:
        for line in f:
            m = _CALL.match(line)
            if m:
                calls[m.group(1)] += 1
            if _FAILED.search(line):
                failed += 1
    return calls, failed


def traced(run_dir: Path, procs: list[tuple[int, int, int, str]]) -> list[tuple[int, int, Path]]:
    """(rank, copy, trace) of every traced process whose trace is there."""
    return [(app, copy, trace_file(run_dir, app, copy)) for _real, app, copy, role in procs
            if role == PROCESS_ROLE and trace_file(run_dir, app, copy).is_file()]


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of the traces: per copy, its system calls, the failed ones, and a count per call."""
    metrics = []
    for app, copy, path in traced(run_dir, procs):
        calls, failed = count_calls(path)
        rows = [("strace system calls", sum(calls.values())), ("strace failed system calls", failed)]
        rows += [(f"{CALLS_OF}{name}", n) for name, n in sorted(calls.items())]
        metrics += [dict(app_rank=app, copy=copy, name=name, value=float(n), unit="count") for name, n in rows]
    return [], metrics


def summary(calls: Counter[str], failed: int) -> str:
    top = ", ".join(f"{name} {n}" for name, n in calls.most_common(5))
    return f"{sum(calls.values())} system calls ({failed} failed); most: {top}"


def after_job(opts: Any, run_dir: Path) -> list[str]:
    """What echorun says of the traces when the run ends: each copy's count, and where its trace is."""
    if not opts.strace:
        return []
    return [f"strace rank {app} copy {copy}: {summary(*count_calls(path))} ({path})"
            for app, copy, path in traced(run_dir, runfiles.plan_procs(run_dir))]


def report_section(session: Any, run: Any) -> list[str]:
    """`mpiecho report`'s lines for the traces of a stored run (none when no copy was traced)."""
    out = []
    for (rank, copy), values in stored_counts(session, run.id).items():
        calls = Counter({name.removeprefix(CALLS_OF): int(v) for name, v in values.items()
                         if name.startswith(CALLS_OF)})
        out.append(f"  rank {rank} copy {copy}: {summary(calls, int(values.get('strace failed system calls', 0)))}")
    return ["strace (system calls per traced copy):", *out] if out else []


ROLE = Role(
    name="strace",
    description="strace on some copies: every system call they make, kept with the run and counted",
    group="strace on copies (every system call, into the run directory's strace/)",
    options=({"flags": ["--strace"], "metavar": "COPY,...",
              "help": "run these copies of every rank under strace -f, e.g. 1 (copy 0 is the representative)"},),
    flag="--strace", listed=3, precedence=3,
    assign=assign, given=given, ingest=ingest_rows, report=report_section, after_job=after_job,
    wrap=Wrap(folder=FOLDER, commands=wrapped),
    slow_roles=(PROCESS_ROLE,),  # a traced copy is slow by design: neither judged nor the reference
    machine=machine, machine_fields={"strace": (None, str | None)},
    # a rank's page sets its traced copies' system calls side by side (pages.py, rank.html beside this file); on the
    # run page its counts are rows of the table of results (no label: they stand under "other results")
    pages=Pages(rank=(Section("rank.html", pages.rank_context),)),
)
