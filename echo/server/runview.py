"""What the run page shows at any size, computed from the store's rows: the verdict's summary (who diverged, was
corrected, excluded, died; each copy once, with counts), the outliers (ranks whose copies differ most), the events
grouped by kind, rank and copy, and a page of the per-rank table. A 4096-rank run reads like a 4-rank one: what
differs first, then the whole picture (echo/server/heatmap.py), then the details on demand."""

from __future__ import annotations

from dataclasses import dataclass

PAGE_RANKS = 64  # ranks per page of the run page's table of ranks and copies
TOP = 8  # outliers listed per measure
MAX_GROUPS = 200  # rows of the grouped events table: more are counted, not listed


@dataclass(slots=True)  # 16,384 of them for a 4096 x 4 run: made faster without a __dict__ each
class Copy:
    """One copy of one rank as the run page tells it."""

    rank: int
    copy: int
    role: str
    state: str
    calls: int
    mpi_time: float  # seconds in MPI calls, MPI_Init and MPI_Finalize left out (when summaries say it)
    compute: float  # seconds between its first and last call not spent in MPI
    status: str = "ok"  # ok, bad (diverged, or ended abnormally), fixed (corrected by vote, or restarted by Reinit)
    note: str = ""
    restarted: bool = False  # Reinit restarted it and the restarted process finished
    died: bool = False  # it ended before MPI_Finalize and was not restarted to the end (set once by copies())


def copies(procs: list, startup: dict[tuple[int, int], float], div: dict, restarts: dict | None = None) -> list[Copy]:
    """Every copy, by rank then copy, with its time in MPI less its time in MPI_Init and MPI_Finalize (`startup`:
    crud.startup_seconds), its status from the divergences (crud.divergences) and, for Reinit, the processes it
    restarted (modeview.restarts: the store keeps the failed one's state and calls)."""
    bad = {(d["app_rank"], d["copy"]): d for d in div["copies"]}
    out = []
    for p in procs:
        seconds = max(p.mpi_time - startup.get((p.app_rank, p.copy), 0.0), 0.0)
        c = Copy(p.app_rank, p.copy, p.role, p.state, p.calls, seconds, max(p.wall_time - p.mpi_time, 0.0),
                 died=not p.state.startswith(("finalized", "stopped")))
        d = bad.get((p.app_rank, p.copy))
        again = (restarts or {}).get(p.app_rank)
        if again is not None and c.died:
            c.restarted = again.finished
            c.died = not again.finished
            c.state = "failed, restarted by Reinit"
            c.status = "fixed" if again.finished else "bad"
            c.note = (f"failed after {p.calls} calls; restarted, {again.calls} calls, "
                      + ("finished" if again.finished else "did not reach MPI_Finalize"))
        if d:
            fixed = d["corrected"] == d["count"]
            c.status = "fixed" if fixed else "bad"
            c.note = "corrected" if fixed else f"diverged at call #{d['first_call']}"
        elif c.died:
            c.status = "bad"  # its state, said in its cell, is the why
        out.append(c)
    return out


def summary(cs: list[Copy], div: dict, events: list) -> dict[str, list]:
    """The verdict's parts, each a list of rows: diverged and corrected copies (first call, how many times, the
    first divergence's words), copies excluded (SDR) and copies that died."""
    diverged = [d for d in div["copies"] if d["corrected"] < d["count"]]
    corrected = [d for d in div["copies"] if d["corrected"] and d["corrected"] == d["count"]]
    excluded: dict[tuple[int, int], dict] = {}
    for e in events:
        if e.kind == "exclusion" and not e.message.startswith("taken back"):
            excluded.setdefault((e.app_rank, e.copy), {"app_rank": e.app_rank, "copy": e.copy, "first_call":
                                                       e.call_seq, "first": e.message, "count": 0})["count"] += 1
    died = [c for c in cs if c.died]
    return {"diverged": diverged, "corrected": corrected, "excluded": sorted(excluded.values(), key=lambda d: (
        d["app_rank"], d["copy"])), "died": died, "restarted": [c for c in cs if c.restarted]}


@dataclass
class Outlier:
    rank: int
    spread: float  # max - min over the rank's copies
    low: Copy
    high: Copy


MEASURES = {"mpi": ("time in MPI", lambda c: c.mpi_time, "s"), "calls": ("calls", lambda c: c.calls, "calls"),
            "compute": ("compute time", lambda c: c.compute, "s")}


def outliers(cs: list[Copy]) -> dict[str, list[Outlier]]:
    """Per measure (MEASURES), the TOP ranks whose copies differ most in it (ranks of one copy have no spread;
    a spread of 0 is no outlier)."""
    ranks: dict[int, list[Copy]] = {}
    for c in cs:
        ranks.setdefault(c.rank, []).append(c)
    out = {}
    for key, (_, value, _) in MEASURES.items():
        spreads = []  # (spread, rank, low, high): the TOP largest become Outliers
        for rank, group in ranks.items():
            if len(group) > 1:
                values = [value(c) for c in group]
                low, high = min(values), max(values)
                if high > low:
                    spreads.append((high - low, rank, group[values.index(low)], group[values.index(high)]))
        spreads.sort(key=lambda s: -s[0])
        out[key] = [Outlier(rank, spread, low, high) for spread, rank, low, high in spreads[:TOP]]
    return out


@dataclass
class EventGroup:
    kind: str
    rank: int | None
    copy: int | None
    count: int
    first_call: int | None
    last_call: int | None
    first: str  # the message of its first event


def event_groups(events: list) -> list[EventGroup]:
    """The events grouped by kind, rank and copy, in the order of each group's first event: 176 divergences of one
    copy are one row that counts them."""
    groups: dict[tuple, EventGroup] = {}
    for e in events:
        g = groups.get((e.kind, e.app_rank, e.copy))
        if g is None:
            groups[e.kind, e.app_rank, e.copy] = EventGroup(e.kind, e.app_rank, e.copy, 1, e.call_seq, e.call_seq,
                                                             e.message)
            continue
        g.count += 1
        if e.call_seq is not None:
            if g.first_call is None or e.call_seq < g.first_call:
                g.first_call, g.first = e.call_seq, e.message
            g.last_call = max(g.last_call if g.last_call is not None else e.call_seq, e.call_seq)
    return list(groups.values())


@dataclass
class RankPage:
    number: int  # from 1
    pages: int
    first: int  # the first rank shown
    last: int  # the last rank shown
    rows: list[tuple[int, list[Copy | None]]]


def rank_page(cs: list[Copy], nranks: int, maxcopies: int, page: int, per_page: int = PAGE_RANKS) -> RankPage:
    """Page `page` (from 1; clamped to the pages there are) of the table of ranks and copies, `per_page` ranks a
    page."""
    per_page = max(per_page, 1)
    pages = max(1, -(-nranks // per_page))
    page = min(max(page, 1), pages)
    first, last = (page - 1) * per_page, min(page * per_page, nranks) - 1
    rows: dict[int, list[Copy | None]] = {r: [None] * maxcopies for r in range(first, last + 1)}
    for c in cs:
        if first <= c.rank <= last and c.copy < maxcopies:
            rows[c.rank][c.copy] = c
    return RankPage(page, pages, first, last, list(rows.items()))
