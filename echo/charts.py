"""Drawing helpers of the web pages' charts, shared by echo/server/plots.py and the roles' page sections: matplotlib as
SVG (offline, no script in the page), text kept as text so that a reader (or a test) can read the values off the
page, a legend right of the axes, and bars grouped per label with a slot per copy; and the cells of a table that
sets copies side by side (compared), drawn in HTML: a page with many of them stays quick to serve."""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

COLORS = ["#2f6db5", "#e0802c", "#3a9a52", "#b8403b", "#7b5aa6", "#8c6d31", "#d35fa5"]
OTHER = "#9a9a9a"


def svg(fig: object) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline in the page: no XML prolog or doctype


def figure(height: float) -> tuple[object, object]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": "echo"})
    return plt.subplots(figsize=(10, height))


def legend(ax: object, first: list | None = None) -> None:
    """The legend right of the axes: `first` handles, then one entry per distinct label drawn."""
    seen: dict[str, object] = {}
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        seen.setdefault(lab, h)
    ax.legend(handles=(first or []) + list(seen.values()), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)


def grouped_bars(title: str, groups: list[str], slots: list[int], values: dict[tuple[str, int], float],
                 xlabel: str, missing: str, fmt: object, gid: str) -> str:
    """Horizontal bars: a group per label, a slot per copy inside it; a value absent from `values` is said in
    its slot (`copy N: {missing}`), never drawn as 0. Each bar is labelled with fmt(value), the label (or the
    missing one) being the SVG group `{gid}-{group index}-{copy}`; a log scale when the values span more than
    100x."""
    from matplotlib.ticker import FuncFormatter

    fig, ax = figure(0.8 + 0.2 * len(groups) * len(slots) + 0.2 * len(groups))
    height = 0.8 / len(slots)
    positive = [v for v in values.values() if v > 0]
    log = bool(positive) and max(positive) / min(positive) > 100
    for j, copy in enumerate(slots):
        for i, label in enumerate(groups):
            y = i + (j - (len(slots) - 1) / 2) * height
            if (label, copy) not in values:  # said where the bar would be
                ax.text(0.01, y, f"copy {copy}: {missing}", va="center", fontsize=7, color="#666",
                        transform=ax.get_yaxis_transform(), gid=f"{gid}-{i}-{copy}")
                continue
            v = values[label, copy]
            ax.barh(y, v if v > 0 or not log else 0, height=height * 0.9, color=COLORS[copy % len(COLORS)],
                    label=f"copy {copy}")
            ax.text(v if v > 0 else 0, y, " " + fmt(v), va="center", fontsize=8, gid=f"{gid}-{i}-{copy}")
    ax.set_yticks(range(len(groups)), groups)
    ax.set_ylim(len(groups) - 0.5, -0.5)  # top to bottom, with room for every copy's slot, drawn or not
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))  # 1, 10, 100: not 10^0, 10^1
    ax.set_xlabel(xlabel + (", log scale" if log else ""))
    ax.set_title(title)
    legend(ax)
    ax.margins(x=0.15)
    ax.grid(axis="x", linewidth=0.3)
    return svg(fig)


def seconds(v: float) -> str:
    """A duration in the unit it reads best in, 4 significant digits: 2.503 s, 12.35 ms, 81.2 µs."""
    if v == 0:
        return "0 s"
    if v >= 1:
        return f"{v:,.{max(0, 3 - int(math.log10(v)))}f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.4g} ms"
    return f"{v * 1e6:.4g} µs"


FAR = 1.5  # a copy whose value is 1.5x, or 1/1.5 of, the median of the rank's other copies' stands out


@dataclass
class Cell:
    """One copy's value in a table of copies side by side: its text, the width of its bar (percent of the cell),
    and how it compares with the other copies of its row (`vs`: "+35%" against their median; `far`: highlighted)."""

    text: str
    value: float | None = None  # None: the copy has no value here (said in `text`, never drawn as 0)
    width: float = 0.0
    vs: str = ""
    far: bool = False


def side_by_side(rows: Sequence[Sequence[float | None]], fmt: Callable[[float], str], missing: str,
                 noise: float = 0.0) -> tuple[list[list[Cell]], bool]:
    """(the cells of each row, whether the bars are on a log scale): rows of values, one per copy (None: the copy
    has none, said as `missing`). Every bar of the table is on one scale, a log scale when the positive values
    span more than 100x (a short call and MPI_Init, a page fault count and a clock in ns). Each value is compared
    with the median of the other copies' values of its row, and is far when it is FAR times or 1/FAR of it and
    more than `noise` from it (a few microseconds of a call are no difference)."""
    positive = [v for row in rows for v in row if v is not None and v > 0]
    hi, lo = (max(positive), min(positive)) if positive else (1.0, 1.0)
    log = hi / lo > 100
    span = math.log10(hi / lo) + 1  # the smallest value keeps a bar of 1/span

    def width(v: float) -> float:
        if v <= 0:
            return 0.0
        return 100.0 * ((math.log10(v / lo) + 1) / span if log else v / hi)

    out = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            if v is None:
                cells.append(Cell(missing))
                continue
            cell = Cell(fmt(v), v, width(v))
            others = [w for j, w in enumerate(row) if j != i and w is not None]
            if others:
                mid = statistics.median(others)
                if mid > 0:
                    cell.vs = f"{(v / mid - 1) * 100:+,.0f}%"
                    cell.far = (v >= FAR * mid or v <= mid / FAR) and abs(v - mid) > noise
                elif v > noise:
                    cell.vs, cell.far = "others 0", True
            cells.append(cell)
        out.append(cells)
    return out, log
