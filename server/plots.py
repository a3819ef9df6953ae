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

    handles = [Patch(color=color[n], label=n) for n in top] + [Patch(color=OTHER, label="other MPI calls")]
    seen = {}
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        seen.setdefault(lab, h)
    ax.legend(handles=handles + list(seen.values()), loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


def _fmt(v: float, unit: str) -> str:
    return f"{v:,.3f} ms" if unit == "ns" else f"{v:,.0f}" if v >= 1 or v == 0 else f"{v:.3g}"


def counter_charts(counters: dict[int, dict]) -> list[str]:
    """Per unit: each counted event of each rank, one bar per copy that counted it (copies that did not are
    named as such, never drawn as 0); a log scale when the values span more than 100x."""
    by_unit: dict[str, list[tuple[str, int, float]]] = {}
    for rank, c in sorted(counters.items()):
        for ev, copies in sorted(c["per_copy"].items()):
            for copy, v in sorted(copies.items()):
                if "total" in v:  # PAPI's nanosecond clocks shown in ms
                    unit = v.get("unit") or "count"
                    value = v["total"] / 1e6 if unit == "ns" else v["total"]
                    by_unit.setdefault(unit, []).append((f"rank {rank} {ev}", copy, value))
    out = []
    for unit, rows in sorted(by_unit.items()):
        groups = list(dict.fromkeys(label for label, _, _ in rows))
        copies = sorted({copy for _, copy, _ in rows})
        fig, ax = _figure(0.8 + 0.3 * len(rows) + 0.2 * len(groups))
        height = 0.8 / len(copies)
        positive = [v for _, _, v in rows if v > 0]
        log = bool(positive) and max(positive) / min(positive) > 100
        for j, copy in enumerate(copies):
            for label, c, v in rows:
                if c != copy:
                    continue
                y = groups.index(label) + (j - (len(copies) - 1) / 2) * height
                ax.barh(y, v if v > 0 or not log else 0, height=height * 0.9, color=COLORS[copy % len(COLORS)],
                        label=f"copy {copy}")
                ax.text(v if v > 0 else 0, y, " " + _fmt(v, unit), va="center", fontsize=8)
        for i, label in enumerate(groups):
            counted = {c for lab, c, _ in rows if lab == label}
            missing = [c for c in copies if c not in counted]
            if missing:  # said where the bar would be, never drawn as 0
                for c in missing:
                    y = i + (copies.index(c) - (len(copies) - 1) / 2) * height
                    ax.text(0.01, y, f"copy {c}: not counted", va="center", fontsize=7, color="#666",
                            transform=ax.get_yaxis_transform())
        ax.set_yticks(range(len(groups)), groups)
        ax.set_ylim(len(groups) - 0.5, -0.5)  # top to bottom, with room for every copy's slot, drawn or not
        if log:
            ax.set_xscale("log")
        shown = "ms" if unit == "ns" else unit
        ax.set_xlabel(f"total per process ({shown})" + (", log scale" if log else ""))
        ax.set_title(f"counters in {shown}, side by side per copy")
        handles, labels = ax.get_legend_handles_labels()
        uniq = dict(zip(labels, handles, strict=True))
        ax.legend(uniq.values(), uniq.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.margins(x=0.15)
        ax.grid(axis="x", linewidth=0.3)
        out.append(_svg(fig))
    return out


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
