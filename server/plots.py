"""Charts of the run page drawn by matplotlib as SVG on the server (offline, no script in the page), with axes,
units and log scales where values span orders of magnitude; text stays text, so a reader (or a test) can read
the values off the page. A chart with nothing to show is not drawn (None)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from echo.records import RecordsError, read_run
from echo.runfiles import has_records

MAX_SLICES = 2000  # calls drawn per track in the timeline: the longest ones when a copy made more
MAX_LABELLED = 20  # marks of the rank page's divergence chart labelled with their call number
MAX_TRACKS = 64  # copies drawn in the timeline (by rank, then copy): a page stays readable and quick
COLORS = ["#2f6db5", "#e0802c", "#3a9a52", "#b8403b", "#7b5aa6", "#8c6d31", "#d35fa5"]
OTHER = "#9a9a9a"
MARKED = {"divergence": ("x", "#c00000"), "corrected": ("+", "#c07000"), "exclusion": ("v", "#7b1fa2"),
          "process-ended-abnormally": ("X", "#000000"), "clocks-apart": ("d", "#c00000")}


def _svg(fig: object) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline in the page: no XML prolog or doctype


def _figure(height: float) -> tuple[object, object]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": "echo"})
    return plt.subplots(figsize=(10, height))


def _legend(ax: object, first: list | None = None) -> None:
    """The legend right of the axes: `first` handles, then one entry per distinct label drawn."""
    seen: dict[str, object] = {}
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        seen.setdefault(lab, h)
    ax.legend(handles=(first or []) + list(seen.values()), loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False)


def call_timeline(run_dir: str, roles: dict[tuple[int, int], str], events: list) -> str | None:
    """Every MPI call of every copy of every rank on one time axis (seconds from the run's earliest clock origin):
    where copies lag, where they diverged or were excluded (markers at the call). None without record files."""
    try:
        files = read_run(Path(run_dir)) if has_records(Path(run_dir)) else []
    except (OSError, RecordsError):
        files = []
    files = [f for f in files if len(f.records)]
    if not files:
        return None
    origin = min(f.start_time for f in files)
    files.sort(key=lambda f: (f.app_rank, f.copy))
    if len(files) > MAX_TRACKS:
        files, hidden = files[:MAX_TRACKS], len(files) - MAX_TRACKS
    else:
        hidden = 0
    spent: dict[str, float] = {}
    for f in files:  # time per function, in bulk
        per_fn = np.bincount(f.records["fn"].astype(np.intp), weights=f.durations(), minlength=len(f.functions))
        for i in np.flatnonzero(per_fn):
            spent[f.functions[i]] = spent.get(f.functions[i], 0.0) + float(per_fn[i])
    top = [n for n, _ in sorted(spent.items(), key=lambda kv: -kv[1])[:len(COLORS)]]
    color = {n: COLORS[i] for i, n in enumerate(top)}
    fig, ax = _figure(1.0 + 0.42 * len(files))
    cut = False
    labels = []
    for y, f in enumerate(files):
        starts = f.seconds("t_start") + (f.start_time - origin)
        durs = f.durations()
        keep = np.arange(len(durs))
        if len(keep) > MAX_SLICES:
            keep = np.sort(np.argpartition(durs, -MAX_SLICES)[-MAX_SLICES:])
            cut = True
        fn_color = [color.get(name, OTHER) for name in f.functions]
        cols = [fn_color[i] for i in f.records["fn"][keep]]
        ax.broken_barh(list(zip(starts[keep], np.maximum(durs[keep], 0.0), strict=True)), (y - 0.35, 0.7),
                       facecolors=cols, linewidth=0, rasterized=cut)  # thousands of calls: one image, fast
        role = roles.get((f.app_rank, f.copy), f.role)
        labels.append(f"rank {f.app_rank} copy {f.copy}" + (f" ({role})" if role else ""))
        for e in events:
            if (e.app_rank, e.copy) == (f.app_rank, f.copy) and e.kind in MARKED and e.call_seq is not None:
                # records are numbered 0, 1, 2...: a call's record is at its number (a death: past the last)
                at = float(starts[min(int(e.call_seq), len(starts) - 1)])
                marker, mcolor = MARKED[e.kind]
                ax.plot([at], [y], marker=marker, color=mcolor, markersize=9, linestyle="none", label=e.kind)
    ax.set_yticks(range(len(files)), labels)
    ax.invert_yaxis()
    # MPI_Init takes most of a short run and says nothing of the copies: the axis starts where it ended
    inits = [float(f.seconds("t_end")[0] + f.start_time - origin) for f in files
             if f.function_names()[0] in ("MPI_Init", "MPI_Init_thread") and len(f.records) > 1]
    title = "MPI calls of every copy of every rank"
    if len(inits) == len(files):
        ends = max(float(f.seconds("t_end")[-1] + f.start_time - origin) for f in files)
        ax.set_xlim(min(inits) - 0.02 * (ends - min(inits)), ends + 0.02 * (ends - min(inits)))
        title += f", from the end of MPI_Init ({min(inits):.3f} s)"
    ax.set_xlabel("time since the run's first process started (s)")
    ax.set_title(title + (f"; the {MAX_SLICES} longest calls per copy" if cut else "")
                 + (f"; the first {MAX_TRACKS} copies ({hidden} more not drawn)" if hidden else ""))
    ax.grid(axis="x", linewidth=0.3)
    from matplotlib.patches import Patch

    _legend(ax, [Patch(color=color[n], label=n) for n in top] + [Patch(color=OTHER, label="other MPI calls")])
    return _svg(fig)


def _fmt(v: float, unit: str) -> str:
    return f"{v:,.3f} ms" if unit == "ns" else f"{v:,.0f}" if v >= 1 or v == 0 else f"{v:.3g}"


def _grouped_bars(title: str, groups: list[str], slots: list[int], values: dict[tuple[str, int], float],
                  xlabel: str, missing: str, fmt: object, gid: str) -> str:
    """Horizontal bars: a group per label, a slot per copy inside it; a value absent from `values` is said in
    its slot (`copy N: {missing}`), never drawn as 0. Each bar is labelled with fmt(value), the label (or the
    missing one) being the SVG group `{gid}-{group index}-{copy}`; a log scale when the values span more than
    100x."""
    from matplotlib.ticker import FuncFormatter

    fig, ax = _figure(0.8 + 0.2 * len(groups) * len(slots) + 0.2 * len(groups))
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
    _legend(ax)
    ax.margins(x=0.15)
    ax.grid(axis="x", linewidth=0.3)
    return _svg(fig)


def counter_charts(counters: dict[int, dict]) -> list[str]:
    """Per unit: each counted event of each rank, one bar per copy that counted it (copies that did not are
    named as such, never drawn as 0); a log scale when the values span more than 100x."""
    by_unit: dict[str, dict[tuple[str, int], float]] = {}
    for rank, c in sorted(counters.items()):
        for ev, copies in sorted(c["per_copy"].items()):
            for copy, v in sorted(copies.items()):
                if "total" in v:  # PAPI's nanosecond clocks shown in ms
                    unit = v.get("unit") or "count"
                    value = v["total"] / 1e6 if unit == "ns" else v["total"]
                    by_unit.setdefault(unit, {})[f"rank {rank} {ev}", copy] = value
    out = []
    for unit, values in sorted(by_unit.items()):
        groups = list(dict.fromkeys(label for label, _ in values))
        shown = "ms" if unit == "ns" else unit
        out.append(_grouped_bars(f"counters in {shown}, side by side per copy", groups,
                                 sorted({copy for _, copy in values}), values, f"total per process ({shown})",
                                 "not counted", lambda v, u=unit: _fmt(v, u), gid=f"counters-{shown}"))
    return out


STARTUP = ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")  # the MPI library starting and stopping, not the program


def mpi_times(procs: list, summaries: list) -> str | None:
    """Seconds each copy of each rank spent inside MPI calls (where a copy waited for its representative or its
    peers), a bar per copy grouped by rank, from its call summaries. MPI_Init and MPI_Finalize are left out: they
    take most of a short run and say nothing of the copies. None when no copy has summaries."""
    values: dict[tuple[str, int], float] = {}  # a copy without summaries (no records) is not drawn as 0
    for s in summaries:
        key = (f"rank {s.app_rank}", s.copy)
        values[key] = values.get(key, 0.0) + (s.time_total if s.function not in STARTUP else 0.0)
    if not values:
        return None
    groups = list(dict.fromkeys(f"rank {p.app_rank}" for p in procs))
    return _grouped_bars("seconds inside MPI calls per copy, MPI_Init and MPI_Finalize left out", groups,
                         sorted({p.copy for p in procs}), values, "time inside MPI calls (s)", "not recorded",
                         lambda v: f"{v:,.4g} s", gid="mpi-time")


def calls_per_function(rank: int, functions: list[str], copies: list[int], calls: dict[tuple[int, str], int]) -> str:
    """How many calls of each MPI function each copy of a rank made (a copy with no summary of a function made
    none: said, not drawn); the labels are the SVG groups `calls-{function index}-{copy}`."""
    values = {(f, k): float(n) for (k, f), n in calls.items()}
    return _grouped_bars(f"rank {rank}: calls per function and copy", functions, copies, values, "calls",
                         "no calls", lambda v: f"{v:,.0f}", gid="calls")


def digits_chart(per_rank: dict[int, list[tuple[int, float]]], fewest: dict[int, float]) -> str | None:
    """Significant digits the copies of each rank agree on along its calls (a line per rank, calls on a numeric
    axis), with each rank's fewest named in the legend. None without measured calls."""
    per_rank = {r: sorted(pts) for r, pts in per_rank.items() if pts}
    if not per_rank:
        return None
    fig, ax = _figure(3.2)
    for i, (rank, pts) in enumerate(sorted(per_rank.items())):
        label = f"rank {rank}" + (f": fewest {fewest[rank]:.1f} digits" if rank in fewest else "")
        ax.plot([c for c, _ in pts], [d for _, d in pts], marker="o", markersize=3, linewidth=1,
                color=COLORS[i % len(COLORS)], label=label)
    ax.set_xlabel("MPI call number of the rank")
    ax.set_ylabel("significant digits the copies agree on")
    ax.set_ylim(0, max(17.0, max(d for pts in per_rank.values() for _, d in pts) + 1))
    ax.set_title("significant digits the copies agree on, by call (double precision has about 16)")
    ax.grid(linewidth=0.3)
    _legend(ax)
    return _svg(fig)


def status_timeline(title: str, rows: list[tuple[str, int, list[tuple[int, str]]]], good: str, gid: str) -> str:
    """One bar per process along its calls (label, calls, [(call, status), ...]; each starts `good`): green while
    `good`, red while not. Each change is written at its call (`call N: status`), as the SVG group
    `{gid}-{row}-{change}` (rows from 0, top down; changes from 1)."""
    fig, ax = _figure(1.0 + 0.45 * len(rows))
    for i, (_, calls, changes) in enumerate(rows):
        edges = [(0, good), *sorted(changes, key=lambda c: c[0]), (max(calls, 1), None)]
        for k, ((start, status), (end, _)) in enumerate(zip(edges, edges[1:], strict=False)):
            ok = status == good
            ax.broken_barh([(min(start, calls), max(min(end, calls) - min(start, calls), 0.5))], (i - 0.3, 0.6),
                           facecolors="#3a9a52" if ok else "#c0392b", label=good if ok else "not " + good)
            if k:
                ax.annotate(f"call {start}: {status}", (min(start, calls), i - 0.3), xytext=(2, 2),
                            textcoords="offset points", fontsize=8, va="bottom", gid=f"{gid}-{i}-{k}")
    ax.set_yticks(range(len(rows)), [label for label, _, _ in rows])
    ax.set_ylim(len(rows) - 0.4, -0.8)
    ax.set_xlim(0, max(max((c for _, c, _ in rows), default=1), 1) * 1.02)
    ax.set_xlabel("MPI call number of the process")
    ax.set_title(title)
    ax.grid(axis="x", linewidth=0.3)
    _legend(ax)
    return _svg(fig)


def divergence_marks(rank: int, copies: list[int], calls: int, marks: list[tuple[int, int, str]]) -> str:
    """Where each copy of a rank diverged or was corrected, by call number: a row per copy, a marker per (call,
    copy, kind), labelled with its call number (up to MAX_LABELLED marks: more would overlap)."""
    fig, ax = _figure(1.0 + 0.4 * len(copies))
    for call, copy, kind in marks:
        marker, color = MARKED.get(kind, ("o", "#c00000"))
        y = copies.index(copy) if copy in copies else len(copies)
        ax.plot([call], [y], marker=marker, color=color, markersize=9, linestyle="none", label=kind)
        if len(marks) <= MAX_LABELLED:
            ax.annotate(f"#{call}", (call, y), xytext=(0, 7), textcoords="offset points", ha="center", fontsize=8)
    ax.set_yticks(range(len(copies)), [f"copy {k}" for k in copies])
    ax.set_ylim(len(copies) - 0.5, -0.7)
    ax.set_xlim(0, max(calls, 1) * 1.02)
    ax.set_xlabel("MPI call number of the copy")
    ax.set_title(f"rank {rank}: where copies diverged or were corrected, by call"
                 + (f" ({len(marks)} times, from call {min(c for c, _, _ in marks)})" if len(marks) > MAX_LABELLED
                    else ""))
    ax.grid(axis="x", linewidth=0.3)
    _legend(ax)
    return _svg(fig)


def derived_metrics(counters: dict[int, dict]) -> list[tuple[int, int, str, float]]:
    """(rank, copy, name, value) of metrics derived from events one copy counted together: instructions per
    cycle where PAPI_TOT_INS and PAPI_TOT_CYC were in the same set."""
    out = []
    for rank, c in sorted(counters.items()):
        ins, cyc = c["per_copy"].get("PAPI_TOT_INS", {}), c["per_copy"].get("PAPI_TOT_CYC", {})
        for copy in sorted(set(ins) & set(cyc)):
            if cyc[copy].get("total"):
                out.append((rank, copy, "instructions per cycle (PAPI_TOT_INS / PAPI_TOT_CYC)",
                            ins[copy].get("total", 0.0) / cyc[copy]["total"]))
    return out


MARK_STYLE = {"": ("o", "#2f6db5", "copies agreed"), "diverged": ("X", "#c00000", "copies diverged"),
              "injection": ("D", "#e0802c", "deliberate: injection or perturbation")}


def wall_times(runs: list[tuple[str, float, str]], gid: str) -> str:
    """A series' wall time per run, oldest first: each run (start time, seconds, mark: "", "diverged" or
    "injection") a point styled by its mark (MARK_STYLE) and labelled with its time; the points of each mark are
    the SVG group `{gid}-{mark or 'agreed'}`, one <use> a run."""
    fig, ax = _figure(1.6 + 0.1 * min(len(runs), 20))
    xs = range(len(runs))
    ax.plot(xs, [t for _, t, _ in runs], color="#9a9a9a", linewidth=1, zorder=1)
    for mark, (marker, color, label) in MARK_STYLE.items():
        at = [i for i, (_, _, m) in enumerate(runs) if m == mark]
        if at:
            ax.scatter(at, [runs[i][1] for i in at], marker=marker, color=color, s=36, zorder=2, label=label,
                       gid=f"{gid}-{mark or 'agreed'}")
    for i, (_, t, _) in enumerate(runs):
        ax.annotate(f"{t:.2f} s", (i, t), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    step = max(1, len(runs) // 12)  # at most a dozen dates under the axis
    ax.set_xticks(list(xs)[::step], [when for when, _, _ in runs][::step], rotation=30, ha="right")
    ax.set_xlim(-0.5, len(runs) - 0.5)
    ax.set_ylim(0, max(t for _, t, _ in runs) * 1.25 or 1)
    ax.set_ylabel("wall time (s)")
    ax.set_xlabel("run, by start time (oldest first)")
    ax.grid(axis="y", linewidth=0.3)
    _legend(ax)
    return _svg(fig)
