"""The run page's heatmap of ranks x copies, written as SVG by hand (a few thousand rectangles: matplotlib would take
seconds at 4096 ranks). A column per rank up to MAX_COLUMNS, beyond that a column per bin of consecutive ranks
showing the bin's largest value (an outlier stays visible); a row per copy. A cell whose ranks hold a diverged copy
is outlined red, one whose ranks hold a copy that died black. Each cell says its ranks, copy and value on hover
(<title>) and in its data-first, data-last and data-copy attributes, so a reader or a test can find a rank's cell."""

from __future__ import annotations

from html import escape

import numpy as np

MAX_COLUMNS = 256  # beyond this many ranks, ranks are binned: a column stays at least ~3.5 pixels wide
WIDTH = 900  # pixels of the cells
ROW = 22  # pixels of a copy's row
LEFT, TOP = 60, 18
SCALE = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"]


def color(value: float, low: float, high: float) -> str:
    if high <= low:
        return SCALE[2]
    return SCALE[min(int((value - low) / (high - low) * len(SCALE)), len(SCALE) - 1)]


def heatmap(gid: str, title: str, nranks: int, ncopies: int, values: dict[tuple[int, int], float],
            marks: dict[tuple[int, int], str], fmt: object, word: str = "copy") -> str:
    """values: {(rank, copy): value}; marks: {(rank, copy): "diverged" | "died" | "fixed"}; word: what a rank's
    processes are (copy, replica, process). A copy without a value is drawn empty (grey), never as 0."""
    per = max(1, -(-nranks // MAX_COLUMNS))  # ranks per column
    columns = -(-nranks // per)
    w = WIDTH / columns
    present = list(values.values())
    low, high = (min(present), max(present)) if present else (0.0, 0.0)
    height = TOP + ROW * ncopies + 34
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="{gid}" class="heatmap" width="{LEFT + WIDTH + 10}" '
           f'height="{height}" data-ranks-per-column="{per}" font-size="11" font-family="sans-serif">',
           f'<text x="{LEFT}" y="12">{escape(title)}</text>']
    marked: dict[tuple[int, int], dict[str, list[int]]] = {}  # (copy, column): {mark: its ranks}
    for (rank, copy), mark in sorted(marks.items()):
        if mark:
            marked.setdefault((copy, rank // per), {}).setdefault(mark, []).append(rank)
    for copy in range(ncopies):
        y = TOP + ROW * copy
        out.append(f'<text x="{LEFT - 6}" y="{y + ROW / 2 + 4:.0f}" text-anchor="end">{word} {copy}</text>')
        # each column's largest value, binned in bulk (NaN: not recorded)
        grid = np.full(columns * per, np.nan)
        for rank in range(nranks):
            v = values.get((rank, copy))
            if v is not None:
                grid[rank] = v
        grid = grid.reshape(columns, per)
        recorded = ~np.isnan(grid).all(axis=1)
        largest = np.where(recorded, np.nanmax(np.where(np.isnan(grid), -np.inf, grid), axis=1), np.nan)
        for col in range(columns):
            first, last = col * per, min((col + 1) * per, nranks) - 1
            here = marked.get((copy, col), {})
            worst = next((m for m in ("diverged", "died", "fixed") if m in here), "")
            which = here.get(worst, [])
            ranks = f"rank {first}" if first == last else f"ranks {first}-{last}"
            said = (f"{fmt(float(largest[col]))}" + (" (the largest)" if last > first else "")) if recorded[col] \
                else "not recorded"
            if worst:
                said += f"; {worst}: rank{'s' if len(which) > 1 else ''} {', '.join(map(str, which[:8]))}"
            fill = color(float(largest[col]), low, high) if recorded[col] else "#e0e0e0"
            stroke = {"diverged": ' stroke="#d00000" stroke-width="2"', "died": ' stroke="#000" stroke-width="2"',
                      "fixed": ' stroke="#e08000" stroke-width="2"'}.get(worst, "")
            out.append(f'<rect class="cell {worst}" x="{LEFT + col * w:.1f}" y="{y}" width="{max(w - 0.5, 1):.1f}" '
                       f'height="{ROW - 2}" fill="{fill}"{stroke} data-first="{first}" data-last="{last}" '
                       f'data-copy="{copy}"><title>{ranks}, {word} {copy}: {escape(said)}</title></rect>')
    # the rank axis: a dozen ticks at most
    axis = TOP + ROW * ncopies + 12
    step = max(1, -(-columns // 12))
    for col in range(0, columns, step):
        out.append(f'<text x="{LEFT + col * w:.1f}" y="{axis}" class="tick">{col * per}</text>')
    binned = f", {per} ranks a column (each its largest)" if per > 1 else ""
    out.append(f'<text x="{LEFT}" y="{axis + 16}" class="legend">rank{binned}; pale {escape(fmt(low))} to dark '
               f'{escape(fmt(high))}; red outline: diverged, black: died, orange: corrected or restarted</text></svg>')
    return "\n".join(out)
