"""Charts of the run page drawn by matplotlib as SVG on the server (offline, no script in the page), with axes,
units and log scales where values span orders of magnitude; text stays text, so a reader (or a test) can read
the values off the page (the drawing helpers: echo/charts.py; each role draws its own charts in its folder). A chart
with nothing to show is not drawn (None)."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from echo.charts import COLORS, OTHER, figure, grouped_bars, legend, svg
from echo.runformat.records import RecordsError, read, read_run
from echo.runformat.runfiles import has_records, record_file, record_files
from echo.server import chartcache

MAX_SLICES = 2000  # calls drawn per track in the timeline: the longest ones when a copy made more
MAX_LABELLED = 20  # marks of the rank page's divergence chart labelled with their call number
MAX_TRACKS = 64  # copies drawn in the timeline (by rank, then copy): a page stays readable and quick
MARKED = {"divergence": ("x", "#c00000"), "corrected": ("+", "#c07000"), "exclusion": ("v", "#7b1fa2"),
          "process-ended-abnormally": ("X", "#000000"), "clocks-apart": ("d", "#c00000")}


def call_timeline(run_dir: str, roles: dict[tuple[int, int], str], events: list,
                  only: dict[tuple[int, int], int] | None = None,
                  window: tuple[float, float] | None = None, origin: float | None = None) -> str | None:
    """Every MPI call of every copy of every rank on one time axis (seconds from the run's earliest clock origin):
    where copies lag, where they diverged or were excluded (markers at the call). None without record files.
    only: {(rank, copy): real rank} of the copies to draw, the first MAX_TRACKS of them read (a range of ranks of a
    large run); None: every copy. window: (from, to) seconds on that axis, the calls and marks inside it drawn (the
    MAX_SLICES longest of each copy inside it: zoomed in, short calls appear); None: the whole run. origin: time 0 of
    the axis, as a Unix time (Binned.origin: that of the run's binned timeline); None: the earliest of those drawn."""
    chosen = sorted(only.items())[:MAX_TRACKS] if only is not None else None
    # in their order: it is the order the marks are drawn and named in the legend
    marked = [(e.kind, e.app_rank, e.copy, e.call_seq) for e in events if e.kind in MARKED and e.call_seq is not None]
    return chartcache.drawn("call-timeline", (run_dir, record_stats(Path(run_dir), chosen), sorted(roles.items()),
                                              marked, chosen, None if only is None else len(only), window, origin),
                            lambda: _call_timeline(run_dir, roles, events, only, chosen, window, origin))


def record_stats(run_dir: Path, chosen: list[tuple[tuple[int, int], int]] | None) -> list[tuple[str, int, int]]:
    """(name, size, modification time) of the record files the timeline reads (`chosen`'s, else all): what says
    that they are the ones it was drawn from."""
    try:
        if not has_records(run_dir):
            return []
        paths = record_files(run_dir) if chosen is None else [record_file(run_dir, real) for _, real in chosen]
        return [(p.name, st.st_size, st.st_mtime_ns) for p in paths if p.is_file() for st in [p.stat()]]
    except OSError:
        return []


def _call_timeline(run_dir: str, roles: dict[tuple[int, int], str], events: list,
                   only: dict[tuple[int, int], int] | None, chosen: list | None,
                   window: tuple[float, float] | None, origin: float | None) -> str | None:
    try:
        if not has_records(Path(run_dir)):
            files = []
        elif chosen is None:
            files = read_run(Path(run_dir))
        else:
            files = [read(record_file(Path(run_dir), real)) for _, real in chosen
                     if record_file(Path(run_dir), real).is_file()]
    except (OSError, RecordsError):
        files = []
    files = [f for f in files if len(f.records)]
    if not files:
        return None
    origin = min(f.start_time for f in files) if origin is None else origin
    files.sort(key=lambda f: (f.app_rank, f.copy))
    hidden = max(len(files) - MAX_TRACKS, 0) if only is None else len(only) - len(chosen)
    files = files[:MAX_TRACKS]
    spent: dict[str, float] = {}
    for f in files:  # time per function, in bulk
        per_fn = np.bincount(f.records["fn"].astype(np.intp), weights=f.durations(), minlength=len(f.functions))
        for i in np.flatnonzero(per_fn):
            spent[f.functions[i]] = spent.get(f.functions[i], 0.0) + float(per_fn[i])
    top = [n for n, _ in sorted(spent.items(), key=lambda kv: -kv[1])[:len(COLORS)]]
    color = {n: COLORS[i] for i, n in enumerate(top)}
    fig, ax = figure(1.0 + 0.42 * len(files))
    cut = False
    labels = []
    by_track: dict[tuple[int, int], list] = {}
    for e in events:
        if e.kind in MARKED and e.call_seq is not None:
            by_track.setdefault((e.app_rank, e.copy), []).append(e)
    for y, f in enumerate(files):
        starts = f.seconds("t_start") + (f.start_time - origin)
        durs = f.durations()
        keep = np.arange(len(durs)) if window is None else \
            np.flatnonzero((starts < window[1]) & (starts + durs > window[0]))
        if len(keep) > MAX_SLICES:
            keep = np.sort(keep[np.argpartition(durs[keep], -MAX_SLICES)[-MAX_SLICES:]])
            cut = True
        fn_color = [color.get(name, OTHER) for name in f.functions]
        cols = [fn_color[i] for i in f.records["fn"][keep]]
        ax.broken_barh(list(zip(starts[keep], np.maximum(durs[keep], 0.0), strict=True)), (y - 0.35, 0.7),
                       facecolors=cols, linewidth=0, rasterized=True)  # an image: thousands of paths were slow
        role = roles.get((f.app_rank, f.copy), f.role)
        labels.append(f"rank {f.app_rank} copy {f.copy}" + (f" ({role})" if role else ""))
        marks: dict[str, list[float]] = {}  # a kind's marks of a track in one artist: 176 divergences stay quick
        seqs = f.records["seq"]
        for e in by_track.get((f.app_rank, f.copy), []):
            # the record of the call, or the next one recorded (a ring holds the last calls; a death: past the last)
            k = int(np.searchsorted(seqs, np.uint64(e.call_seq)))
            at = float(starts[min(k, len(starts) - 1)])
            if window is None or window[0] <= at <= window[1]:
                marks.setdefault(e.kind, []).append(at)
        for kind, at in marks.items():
            marker, mcolor = MARKED[kind]
            ax.plot(at, [y] * len(at), marker=marker, color=mcolor, markersize=9, linestyle="none", label=kind)
    ax.set_yticks(range(len(files)), labels)
    ax.invert_yaxis()
    # MPI_Init takes most of a short run and says nothing of the copies: the axis starts where it ended
    inits = [float(f.seconds("t_end")[0] + f.start_time - origin) for f in files
             if f.function_names()[0] in ("MPI_Init", "MPI_Init_thread") and len(f.records) > 1]
    title = "MPI calls of every copy of every rank"
    if window is not None:
        ax.set_xlim(*window)
        title += f", from {window[0]:.3f} s to {window[1]:.3f} s"
    elif len(inits) == len(files):
        ends = max(float(f.seconds("t_end")[-1] + f.start_time - origin) for f in files)
        ax.set_xlim(min(inits) - 0.02 * (ends - min(inits)), ends + 0.02 * (ends - min(inits)))
        title += f", from the end of MPI_Init ({min(inits):.3f} s)"
    ax.set_xlabel("time since the run's first process started (s)")
    windowed = sum(f.windowed for f in files)
    ax.set_title(title + (f"; the {MAX_SLICES} longest calls per copy" if cut else "")
                 + (f"; {windowed} copies' records hold call 0 and their last calls only (echorun --trace records "
                    "every call)" if windowed else "")
                 + (f"; the first {MAX_TRACKS} copies ({hidden} more not drawn)" if hidden else ""))
    ax.grid(axis="x", linewidth=0.3)
    from matplotlib.patches import Patch

    legend(ax, [Patch(color=color[n], label=n) for n in top] + [Patch(color=OTHER, label="other MPI calls")])
    return svg(fig)


MAX_BINS = 64  # rows of the binned timeline: the ranks grouped into this many at most, whatever the run's size
TIME_BINS = 240  # its columns


@dataclass(frozen=True)
class Binned:
    """A run's calls binned, read once from its record files (kept: a window or another range of ranks asked for
    draws again, but reads nothing): time 0 (`origin`, a Unix time: the earliest clock origin of its processes,
    the axis of both timelines of the run), its axis from t0 to t1 (seconds from the end of MPI_Init to the last
    call's end), `per` ranks a row, and each cell's fraction of its copies' time inside MPI calls; the marked
    events as {kind: (seconds, rows)}."""

    origin: float
    t0: float
    t1: float
    per: int
    fraction: np.ndarray  # rows x TIME_BINS; NaN: a row without records
    marks: dict[str, tuple[list[float], list[int]]]
    windowed: int = 0  # copies whose records hold call 0 and their last calls only (no time inside MPI before them)


def binned(run_dir: str, nranks: int, events: list) -> Binned | None:
    """The run binned (None without record files): the ranks into at most MAX_BINS rows, time into TIME_BINS
    columns."""
    marked = tuple((e.kind, e.app_rank, e.copy, e.call_seq) for e in events
                   if e.kind in MARKED and e.call_seq is not None)
    return _binned(run_dir, tuple(record_stats(Path(run_dir), None)), nranks, marked)


def time_in_mpi(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Seconds inside the calls [starts, ends) (in order, not overlapping: one process's) within each interval between
    consecutive `edges`: the time inside them up to each edge, by bisection, differenced."""
    before = np.concatenate(([0.0], np.cumsum(ends - starts)))  # inside calls 0..k-1, all ended
    k = np.searchsorted(starts, edges, side="right")  # calls begun by each edge
    last = np.maximum(k - 1, 0)
    partial = np.where(k > 0, np.clip(np.minimum(edges, ends[last]) - starts[last], 0.0, None), 0.0)
    return np.diff(before[last] + partial)


@functools.lru_cache(maxsize=8)  # keyed by the record files' names, sizes and times: a changed file is read again
def _binned(run_dir: str, stats: tuple, nranks: int, marked: tuple) -> Binned | None:
    try:
        files = [f for f in read_run(Path(run_dir)) if len(f.records)] if stats else []
    except (OSError, RecordsError):
        files = []
    if not files:
        return None
    origin = min(f.start_time for f in files)
    spans = [(f, f.seconds("t_start") + (f.start_time - origin), f.seconds("t_end") + (f.start_time - origin))
             for f in files]
    # from where MPI_Init ended, as the detailed timeline: it takes most of a short run and says nothing of the copies
    inits = [float(e[0]) for f, _, e in spans if f.function_names()[0] in ("MPI_Init", "MPI_Init_thread")
             and len(e) > 1]
    t0 = min(inits) if len(inits) == len(spans) else min(float(s[0]) for _, s, _ in spans)
    t1 = max(float(e[-1]) for _, _, e in spans)
    t1 = t1 if t1 > t0 else t0 + 1e-6
    edges = np.linspace(t0, t1, TIME_BINS + 1)
    per = -(-nranks // MAX_BINS)  # ranks a row
    rows = -(-nranks // per)
    inside, copies = np.zeros((rows, TIME_BINS)), np.zeros(rows)
    for f, starts, ends in spans:
        row = min(f.app_rank // per, rows - 1)
        inside[row] += time_in_mpi(starts, ends, edges)
        copies[row] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = np.where(copies[:, None] > 0, np.clip(inside / (copies[:, None] * (edges[1] - edges[0])), 0, 1),
                            np.nan)
    at = {(f.app_rank, f.copy): (f.records["seq"], s) for f, s, _ in spans}
    marks: dict[str, tuple[list[float], list[int]]] = {}
    for kind, rank, copy, call in marked:
        seqs, starts = at.get((rank, copy), (None, None))
        if starts is not None:  # at the call's record, or the next one recorded (a ring), or the last (a death)
            xs, ys = marks.setdefault(kind, ([], []))
            xs.append(float(starts[min(int(np.searchsorted(seqs, np.uint64(call))), len(starts) - 1)]))
            ys.append(min(rank // per, rows - 1))
    return Binned(origin, t0, t1, per, fraction, marks, sum(f.windowed for f in files))


def binned_timeline(run_dir: str, nranks: int, b: Binned, link: Callable[[int, int], str]) -> str:
    """The whole run at a glance, at any size: a row per `b.per` ranks, a column per slice of time, each cell the
    fraction of its copies' time spent inside MPI calls; divergences and the other marked events at their rank's
    row and call's time. Each row's label links to `link(first, last)` (the detailed timeline of its ranks)."""
    return chartcache.drawn("binned-timeline", (run_dir, record_stats(Path(run_dir), None), nranks,
                                                sorted(b.marks.items()), link(0, 0)),
                            lambda: _binned_timeline(nranks, b, link))


def _binned_timeline(nranks: int, b: Binned, link: Callable[[int, int], str]) -> str:
    rows = len(b.fraction)
    fig, ax = figure(1.2 + 0.16 * rows)
    image = ax.imshow(b.fraction, aspect="auto", cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest",
                      extent=(b.t0, b.t1, rows - 0.5, -0.5))
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01, label="fraction of the time inside MPI calls")
    for kind, (xs, ys) in b.marks.items():
        marker, color = MARKED[kind]
        ax.plot(xs, ys, marker=marker, color=color, markersize=8, linestyle="none", label=kind)
    ranges = [(r * b.per, min((r + 1) * b.per, nranks) - 1) for r in range(rows)]
    ax.set_yticks(range(rows), [f"rank {a}" if a == z else f"ranks {a}-{z}" for a, z in ranges], fontsize=7)
    for label, (a, z) in zip(ax.get_yticklabels(), ranges, strict=True):
        label.set_url(link(a, z))  # a row's label leads to its ranks' calls
    ax.set_xlim(b.t0, b.t1)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlabel("time since the run's first process started (s)")
    ax.set_title(f"all {nranks} ranks" + (f", {b.per} a row" if b.per > 1 else "") + ": the fraction of their "
                 f"copies' time inside MPI calls, from {b.t0:.3f} s to {b.t1:.3f} s"
                 + (f"; {b.windowed} copies' records hold call 0 and their last calls only, their time before "
                    "them not drawn (echorun --trace records every call)" if b.windowed else ""))
    if b.marks:
        ax.legend(loc="upper left", bbox_to_anchor=(1.12, 1.0), frameon=False)
    return svg(fig).replace(' target="_blank"', "")  # matplotlib's links open a new window: these lead on in this one


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
    copies = sorted({p.copy for p in procs})
    return chartcache.drawn("mpi-time", (groups, copies, list(values.items())), lambda: grouped_bars(
        "seconds inside MPI calls per copy, MPI_Init and MPI_Finalize left out", groups, copies, values,
        "time inside MPI calls (s)", "not recorded", lambda v: f"{v:,.4g} s", gid="mpi-time"))


def calls_per_function(rank: int, functions: list[str], copies: list[int], calls: dict[tuple[int, str], int]) -> str:
    """How many calls of each MPI function each copy of a rank made (a copy with no summary of a function made
    none: said, not drawn); the labels are the SVG groups `calls-{function index}-{copy}`."""
    values = {(f, k): float(n) for (k, f), n in calls.items()}
    return grouped_bars(f"rank {rank}: calls per function and copy", functions, copies, values, "calls",
                         "no calls", lambda v: f"{v:,.0f}", gid="calls")


def status_timeline(title: str, rows: list[tuple[str, int, list[tuple[int, str]]]], good: str, gid: str) -> str:
    """One bar per process along its calls (label, calls, [(call, status), ...]; each starts `good`): green while
    `good`, red while not. Each change is written at its call (`call N: status`), as the SVG group
    `{gid}-{row}-{change}` (rows from 0, top down; changes from 1)."""
    return chartcache.drawn("status-timeline", (title, rows, good, gid), lambda: _status_timeline(title, rows, good,
                                                                                                  gid))


def _status_timeline(title: str, rows: list[tuple[str, int, list[tuple[int, str]]]], good: str, gid: str) -> str:
    fig, ax = figure(1.0 + 0.45 * len(rows))
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
    legend(ax)
    return svg(fig)


def divergence_marks(rank: int, copies: list[int], calls: int, marks: list[tuple[int, int, str]]) -> str:
    """Where each copy of a rank diverged or was corrected, by call number: a row per copy, a marker per (call,
    copy, kind), labelled with its call number (up to MAX_LABELLED marks: more would overlap)."""
    fig, ax = figure(1.0 + 0.4 * len(copies))
    rows = {k: i for i, k in enumerate(copies)}
    drawn: dict[tuple[int, str], list[int]] = {}  # the marks of a copy and kind in one artist: hundreds stay quick
    for call, copy, kind in marks:
        drawn.setdefault((rows.get(copy, len(copies)), kind), []).append(call)
    for (y, kind), calls_at in drawn.items():
        marker, color = MARKED.get(kind, ("o", "#c00000"))
        ax.plot(calls_at, [y] * len(calls_at), marker=marker, color=color, markersize=9, linestyle="none", label=kind)
    if len(marks) <= MAX_LABELLED:
        for call, copy, _ in marks:
            ax.annotate(f"#{call}", (call, rows.get(copy, len(copies))), xytext=(0, 7), textcoords="offset points",
                        ha="center", fontsize=8)
    ax.set_yticks(range(len(copies)), [f"copy {k}" for k in copies])
    ax.set_ylim(len(copies) - 0.5, -0.7)
    ax.set_xlim(0, max(calls, 1) * 1.02)
    ax.set_xlabel("MPI call number of the copy")
    ax.set_title(f"rank {rank}: where copies diverged or were corrected, by call"
                 + (f" ({len(marks)} times, from call {min(c for c, _, _ in marks)})" if len(marks) > MAX_LABELLED
                    else ""))
    ax.grid(axis="x", linewidth=0.3)
    legend(ax)
    return svg(fig)


MARK_STYLE = {"": ("o", "#2f6db5", "copies agreed"), "diverged": ("X", "#c00000", "copies diverged"),
              "injection": ("D", "#e0802c", "deliberate: injection or perturbation")}


LABEL_ALL = 20  # runs up to which every point of the history is labelled with its time


def worth_labelling(times: list[float]) -> set[int]:
    """The points of a long history whose time is written on the chart: the last run, and the runs far from the
    series' usual time (beyond 3 median absolute deviations of the median and 10% of it, the 5 farthest at most);
    every point of a short one. The others say theirs on hover."""
    if len(times) <= LABEL_ALL:
        return set(range(len(times)))
    t = np.asarray(times)
    median = float(np.median(t))
    far_from = max(3 * float(np.median(np.abs(t - median))), 0.1 * median)
    far = [i for i in np.argsort(-np.abs(t - median)) if abs(t[i] - median) > far_from][:5]
    return {len(times) - 1, *(int(i) for i in far)}


def hover_titles(svg_text: str, gid: str, titles: list[str]) -> str:
    """Give each point (<use>) of the SVG group `gid`, in order, a <title> a browser shows on hover."""
    start = svg_text.find(f'id="{gid}"')
    if start < 0:
        return svg_text
    end = svg_text.find("</g>\n  </g>", start)
    end = end if end >= 0 else len(svg_text)
    part, done = svg_text[start:end], []
    for title in titles:
        at = part.find("<use ")
        if at < 0:
            break
        close = part.find("/>", at)
        done.append(part[:close] + f"><title>{html.escape(title)}</title></use>")
        part = part[close + 2:]
    return svg_text[:start] + "".join(done) + part + svg_text[end:]


def wall_times(runs: list[tuple[str, float, str]], gid: str) -> str:
    """A series' wall time per run, oldest first: each run (start time, seconds, mark: "", "diverged" or
    "injection") a point styled by its mark (MARK_STYLE); the points worth it (worth_labelling) labelled with their
    time, every point saying its run on hover (<title>). The points of each mark are the SVG group
    `{gid}-{mark or 'agreed'}`, one <use> a run."""
    fig, ax = figure(1.6 + 0.1 * min(len(runs), 20))
    xs = range(len(runs))
    ax.plot(xs, [t for _, t, _ in runs], color="#9a9a9a", linewidth=1, zorder=1)
    titles = {}
    for mark, (marker, color, label) in MARK_STYLE.items():
        at = [i for i, (_, _, m) in enumerate(runs) if m == mark]
        if at:
            ax.scatter(at, [runs[i][1] for i in at], marker=marker, color=color, s=36 if len(runs) <= 200 else 12,
                       zorder=2, label=label, gid=f"{gid}-{mark or 'agreed'}")
            titles[f"{gid}-{mark or 'agreed'}"] = [f"{runs[i][0]}: {runs[i][1]:.2f} s, {label}" for i in at]
    labelled = worth_labelling([t for _, t, _ in runs])
    for i, (_, t, _) in enumerate(runs):
        if i in labelled:
            ax.annotate(f"{t:.2f} s", (i, t), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    step = max(1, len(runs) // 12)  # at most a dozen dates under the axis
    ax.set_xticks(list(xs)[::step], [when for when, _, _ in runs][::step], rotation=30, ha="right")
    ax.set_xlim(-0.5, len(runs) - 0.5)
    ax.set_ylim(0, max(t for _, t, _ in runs) * 1.25 or 1)
    ax.set_ylabel("wall time (s)")
    ax.set_xlabel("run, by start time (oldest first)"
                  + ("; the last run and the outliers labelled, hover a point for its time" if len(labelled) <
                     len(runs) else ""))
    ax.grid(axis="y", linewidth=0.3)
    legend(ax)
    out = svg(fig)
    for group, texts in titles.items():
        out = hover_titles(out, group, texts)
    return out
