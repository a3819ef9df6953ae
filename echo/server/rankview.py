"""What a rank's page compares, from the store's rows: each copy's totals side by side (time in MPI, compute between
its calls) and its time in each MPI function, every value set against the rank's other copies (echo/charts.py's
side_by_side: the copy that differs is highlighted). Tables, not charts: 8 copies and 60 functions stay readable,
and a page is served in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass

from echo.charts import Cell, seconds, side_by_side
from echo.server.plots import STARTUP

TOP_FUNCTIONS = 20  # functions listed first (the most time); the others follow, folded
NOISE = 1e-4  # seconds: copies closer than this in a function or a total are not said to differ


@dataclass
class Row:
    """A row of a table of copies side by side: what it is, a word on it, a cell per copy."""

    label: str
    note: str
    cells: list[Cell]


@dataclass
class Comparison:
    totals: list[Row]  # time in MPI and compute between calls, per copy
    functions: list[Row]  # time per MPI function, most time first (MPI_Init and MPI_Finalize last)
    log: bool  # the functions' bars are on a log scale


def compare(procs: list, summaries: list) -> Comparison:
    """The copies of one rank (procs, by copy) and their call summaries, side by side."""
    copies = [p.copy for p in procs]
    time: dict[tuple[str, int], float] = {}
    calls: dict[tuple[str, int], int] = {}
    for s in summaries:
        time[s.function, s.copy] = time.get((s.function, s.copy), 0.0) + s.time_total
        calls[s.function, s.copy] = calls.get((s.function, s.copy), 0) + s.calls
    recorded = {k for _, k in time}  # a copy without summaries (no records) has no value: said, not 0
    in_mpi = [sum(t for (f, k), t in time.items() if k == c and f not in STARTUP) if c in recorded else None
              for c in copies]
    compute = [max(p.wall_time - p.mpi_time, 0.0) if p.copy in recorded else None for p in procs]
    cells, _ = side_by_side([in_mpi, compute], seconds, "not recorded", NOISE)
    totals = [Row("time in MPI calls", "MPI_Init and MPI_Finalize left out", cells[0]),
              Row("compute between calls", "from its first call to its last, outside MPI", cells[1])]
    functions = sorted({f for f, _ in time}, key=lambda f: (f in STARTUP, -max(time.get((f, c), 0.0)
                                                                                for c in copies), f))
    values = [[time.get((f, c)) if (f, c) in time else None for c in copies] for f in functions]
    cells, log = side_by_side(values, seconds, "no calls", NOISE)
    rows = []
    for f, row in zip(functions, cells, strict=True):
        n = sorted({calls[f, c] for c in copies if (f, c) in calls})
        rows.append(Row(f, (f"{n[0]:,} call" if len(n) == 1 else f"{n[0]:,} to {n[-1]:,} call")
                        + ("s" if n[-1] != 1 else ""), row))
    return Comparison(totals, rows, log)
