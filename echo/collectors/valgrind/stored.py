"""The Valgrind tools' results after the job: `echorun --junit`'s memcheck suite, the store's rows and `mpiecho
report`'s section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echo.collectors.valgrind.files import output_file
from echo.collectors.valgrind.outputs import collect, cut_text, parse_memcheck, report_cut
from echo.runformat import runfiles


def junit_suite(opts: Any, run_dir: Path, program: str, seconds: float) -> Any:
    """`echorun --junit`'s memcheck suite (None when no copy ran under memcheck)."""
    return memcheck_suite(run_dir, program, seconds)


def memcheck_suite(run_dir: Path, program: str, seconds: float) -> Any:
    """A case per copy that ran under memcheck: failed by errors in the program itself; the errors left in
    libraries (after the suppressions) are counted in its output."""
    from echo.runformat import junit

    procs = [(real, app, copy) for real, app, copy, role in runfiles.plan_procs(run_dir) if role == "memcheck"]
    if not procs:
        return None
    suite = junit.suite(f"echo memcheck {Path(program).name}", seconds)
    for real, app, copy in procs:
        xml = output_file(run_dir, app, copy, "memcheck", "xml")
        name = f"rank {app} copy {copy}: no memcheck errors in the program"
        took = junit.process_seconds(run_dir, real)
        if not xml.is_file():
            junit.case(suite, "echo.memcheck", name, took, "memcheck wrote no report (the process did not start "
                       "under Valgrind, or was killed)")
            continue
        errors = parse_memcheck(xml, program)
        mine = [e for e in errors if e.in_program]
        others = len(errors) - len(mine)
        out = f"{others} more in libraries (not the program's)" if others else ""
        detail = "\n".join(f"{e.kind}: {e.what} at {' < '.join(e.stack[:4])}" for e in mine)
        failure = f"{len(mine)} memcheck error{'s' if len(mine) != 1 else ''} in the program" if mine else None
        if report_cut("memcheck", xml):  # never a passing case: what came after the cut is unknown
            failure = "; ".join(filter(None, [failure, cut_text("memcheck", xml, app, copy, program)]))
        junit.case(suite, "echo.memcheck", name, took, failure, detail, out)
    return suite


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of the tools' outputs (echo/store/ingest.py): collect's events and metrics."""
    return collect(run_dir, procs, meta.get("program_path") or meta["program"])  # echorun resolved it


def report_section(session: Any, run: Any) -> list[str]:
    """`mpiecho report`'s lines for the tools' results of a stored run (none when no tool ran)."""
    from sqlalchemy import select

    from echo.store.models import Metric

    tools = session.scalars(select(Metric).where(Metric.run_id == run.id, Metric.name.regexp_match(
        "^(memcheck|callgrind|cachegrind|massif) ")).order_by(Metric.app_rank, Metric.copy, Metric.id)).all()
    return valgrind_text(tools) if tools else []


def valgrind_text(metrics: list[Any]) -> list[str]:
    """Tool results per rank and copy (-1: callgrind slices merged into one profile)."""
    from echo.tables import table

    out = ["valgrind (copy -1: the slices of a rank merged):"]
    rows = [("RANK", "COPY", "RESULT", "VALUE")]
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            continue  # per-function costs: the top ones below
        rows.append((str(m.app_rank), str(m.copy), m.name, f"{m.value:.0f} {m.unit}".strip()))
    out.append(table(rows))
    tops: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            fn = m.name.split(" in ", 1)[1].removesuffix(" (slices merged)")
            tops.setdefault((m.app_rank, m.copy), []).append((m.value, fn))
    for (rank, copy), fns in sorted(tops.items()):
        best = ", ".join(f"{fn} {v:.0f}" for v, fn in sorted(fns, reverse=True)[:5])
        out.append(f"  rank {rank} copy {copy} most instructions: {best}")
    return out
