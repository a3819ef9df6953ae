"""The perturbation's section of the run page (echo/collectors/roles.py's "pages"): the significant digits the copies of
each rank agree on, along the run (run.html)."""

from __future__ import annotations

from typing import Any

from echo.charts import COLORS, figure, legend, svg


def run_context(session: Any, run: Any, procs: list, events: list) -> dict[str, Any] | None:
    """The digits chart from the stored "digits at call #N FN" and "digits fewest" metrics; None without them."""
    from sqlalchemy import select

    from echo.store.models import Metric

    rows = session.scalars(select(Metric).where(Metric.run_id == run.id, Metric.name.startswith("digits "))
                           .order_by(Metric.id)).all()
    per_rank: dict[int, list[tuple[int, float]]] = {}  # one chart, a line per rank, calls on a numeric axis
    for m in rows:
        if m.name.startswith("digits at call"):
            per_rank.setdefault(m.app_rank, []).append((int(m.name.split("#")[1].split()[0]), m.value))
    fewest = {m.app_rank: m.value for m in rows if m.name.startswith("digits fewest")}
    chart = digits_chart(per_rank, fewest)
    return dict(digits_chart=chart) if chart else None


def digits_chart(per_rank: dict[int, list[tuple[int, float]]], fewest: dict[int, float]) -> str | None:
    """Significant digits the copies of each rank agree on along its calls (a line per rank, calls on a numeric
    axis), with each rank's fewest named in the legend. None without measured calls."""
    per_rank = {r: sorted(pts) for r, pts in per_rank.items() if pts}
    if not per_rank:
        return None
    fig, ax = figure(3.2)
    for i, (rank, pts) in enumerate(sorted(per_rank.items())):
        label = f"rank {rank}" + (f": fewest {fewest[rank]:.1f} digits" if rank in fewest else "")
        ax.plot([c for c, _ in pts], [d for _, d in pts], marker="o", markersize=3, linewidth=1,
                color=COLORS[i % len(COLORS)], label=label)
    ax.set_xlabel("MPI call number of the rank")
    ax.set_ylabel("significant digits the copies agree on")
    ax.set_ylim(0, max(17.0, max(d for pts in per_rank.values() for _, d in pts) + 1))
    ax.set_title("significant digits the copies agree on, by call (double precision has about 16)")
    ax.grid(linewidth=0.3)
    legend(ax)
    return svg(fig)

