"""The web reports, rendered on the server from the store (templates in web/; each role's sections from its folder)."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlencode

from jinja2 import BaseLoader, ChoiceLoader, Environment, FileSystemLoader, TemplateNotFound, select_autoescape
from sqlalchemy.orm import Session

from echo import modes
from echo.charts import FAR
from echo.collectors import roles
from echo.report import bad_events, copies_text, in_order, injections_brief, not_judged, roles_text
from echo.resources import WEB_DIR
from echo.server import crud, heatmap, modeview, plots, rankview, runview


class RoleTemplates(BaseLoader):
    """A role's templates, "ROLE/FILE", read from the role's own folder (echo/collectors/roles.py's "pages"), wherever
    it is: the pages name no role."""

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        name, _, file = template.partition("/")
        try:
            path = roles.folder(name) / file
        except LookupError:
            raise TemplateNotFound(template) from None
        if not path.is_file():
            raise TemplateNotFound(template)
        mtime = path.stat().st_mtime
        return path.read_text(), str(path), lambda: path.is_file() and path.stat().st_mtime == mtime


ENV = Environment(loader=ChoiceLoader([FileSystemLoader(WEB_DIR / "templates"), RoleTemplates()]),
                  autoescape=select_autoescape(["html"]))


def _render(template: str, standalone: bool = False, root: str = "/", **context: object) -> str:
    css = (WEB_DIR / "static" / "echo.css").read_text() if standalone else None
    return ENV.get_template(template).render(
        inline_css=css, standalone=standalone, root=root, copies=copies_text, name=lambda r: crud.program_name(r.argv),
        injections=injections_brief, roles=roles_text, varied=roles.varied,
        when=lambda t: time.strftime("%Y-%m-%d %H:%M", time.localtime(t)), **context)


def role_sections(page: str, *args: object, **common: object) -> list[tuple[str, str | None]]:
    """The roles' sections of a page ("run": args session, run, procs, events; "rank": session, run, rank, procs),
    in the order users read the roles: ("html", the section) for each that has something to show, and on the run
    page ("results", None) where the table of results stands (with the first role that labels rows of it, else
    after them all)."""
    out: list[tuple[str, str | None]] = []
    for label, sections in roles.page_sections(page):
        if label and ("results", None) not in out:
            out.append(("results", None))
        for template, context in sections:
            values = context(*args)
            if values is not None:
                out.append(("html", _render(template, **common, **values)))
    if page == "run" and ("results", None) not in out:
        out.append(("results", None))
    return out


def results_title() -> str:
    """The heading of the run page's table of results: the roles' labels of its rows ("Valgrind, sensitivity and
    other results")."""
    labels = [label for label, _ in roles.page_sections("run") if label]
    return f"{', '.join(labels)} and other results" if labels else "Results"


RUNS_PER_PAGE = 100
SMALL = 16  # ranks up to which the run page draws its per-rank charts (bars per copy, the timeline of calls) inline


def runs_page(session: Session, *, filters: dict, page: int = 1) -> str:
    """The list of runs: a page of RUNS_PER_PAGE, newest first, filtered (filters: crud.page_of_runs' keywords,
    and the texts the form shows, since_text and until_text)."""
    query = {k: v for k, v in filters.items() if not k.endswith("_text")}
    total = crud.page_of_runs(session, **query, limit=0)[1]
    pages = max(1, -(-total // RUNS_PER_PAGE))
    page = min(max(page, 1), pages)
    runs, _ = crud.page_of_runs(session, **query, limit=RUNS_PER_PAGE, offset=(page - 1) * RUNS_PER_PAGE)
    return _render("runs.html", title="Runs", runs=runs, f=filters, total=total, page=page, pages=pages,
                   first=(page - 1) * RUNS_PER_PAGE + 1, statuses=crud.statuses(session), modes=crud.modes(session),
                   link=lambda n: "?" + urlencode({**{k: v for k, v in form_values(filters).items() if v}, "page": n}))


def form_values(filters: dict) -> dict[str, str]:
    """The filters as the form (and a page link) gives them."""
    return {"program": filters.get("program") or "", "mode": filters.get("mode") or "",
            "status": filters.get("status") or "",
            "diverged": {True: "true", False: "false"}.get(filters.get("diverged"), ""),
            "since": filters.get("since_text") or "", "until": filters.get("until_text") or ""}


def run_page(session: Session, *, run_id: str, standalone: bool = False, page: int = 1) -> str | None:
    """A run at any size: the verdict's summary, the outliers, the heatmap of ranks x copies, a page of the table of
    ranks (`page`, from 1), the events grouped; the per-rank charts only for runs of up to SMALL ranks."""
    run = crud.get_run(session, run_id=run_id)
    if run is None:
        return None
    procs = crud.procs(session, run_id=run_id)
    events = in_order(crud.events(session, run_id=run_id))
    div = crud.divergences(session, run_id=run_id)
    maxcopies = max(run.copies)
    mode = modes.of_stored(run.mode)
    repairs = modeview.repairs(events, run.started_at) if mode.restarts else []
    word = mode.word
    cs = runview.copies(procs, crud.startup_seconds(session, run_id=run_id, functions=plots.STARTUP), div,
                        modeview.restarts(run.run_dir, run.status == "ok") if mode.restarts else None)
    marks = {(c.rank, c.copy): "died" if c.died and c.status == "bad" and not c.note.startswith("diverged")
             else {"bad": "diverged", "fixed": "fixed"}.get(c.status, "") for c in cs if c.status != "ok"}
    heatmaps = [heatmap.heatmap("heatmap-mpi", "seconds in MPI calls (MPI_Init and MPI_Finalize left out)",
                                run.nranks, maxcopies, {(c.rank, c.copy): c.mpi_time for c in cs}, marks,
                                lambda v: f"{v:,.4g} s", word),
                heatmap.heatmap("heatmap-calls", "MPI calls", run.nranks, maxcopies,
                                {(c.rank, c.copy): float(c.calls) for c in cs}, marks, lambda v: f"{v:,.0f} calls",
                                word)]
    # the metrics no role shows in a section of its own, per-function values (NAME in FUNCTION) left out
    apart = roles.results_apart()
    results = [m for m in crud.metrics(session, run_id=run_id) if not (apart and m.name.startswith(apart))
               and " in " not in m.name]
    small = run.nranks <= SMALL
    perf_chart = slowness_chart(procs, events)
    exclusion_chart = exclusions_chart(procs, events)
    time_chart = plots.mpi_times(procs, crud.call_summaries(session, run_id=run_id)) if small else None
    root = "/" if not standalone else ""
    sections = role_sections("run", session, run, procs, events, standalone=standalone, root=root)
    shown = [e for e in events if e.kind != "perf-not-judged"]
    groups = runview.event_groups(shown)
    for g in groups:
        if g.kind == "reinit" and repairs:  # its words are epoch stamps, and its "call" the repair's number
            g.first, g.first_call, g.last_call = "; ".join(r.text() for r in repairs), None, None
    return _render("run.html", standalone=standalone, root=root, title=f"Run {run.id}",
                   run=run, run_procs=procs, maxcopies=maxcopies, events=events, div=div,
                   summary=runview.summary(cs, div, events), outliers=runview.outliers(cs), measures=runview.MEASURES,
                   heatmaps=heatmaps, table=runview.rank_page(cs, run.nranks, maxcopies, page,
                                            # a file has no other pages to link to: it holds every rank
                                            run.nranks if standalone else runview.PAGE_RANKS),
                   groups=groups[:runview.MAX_GROUPS], ngroups=len(groups), max_groups=runview.MAX_GROUPS,
                   repairs=repairs, word=word,
                   role_sections=sections, results=results[:MAX_RESULTS], nresults=len(results),
                   results_title=results_title(), bad_events=bad_events(),
                   time_chart=time_chart, perf_chart=perf_chart, exclusion_chart=exclusion_chart,
                   call_timeline=plots.call_timeline(run.run_dir, {(p.app_rank, p.copy): p.role for p in procs},
                                                     events) if small else None,
                   slow_hosts=[e for e in events if e.kind == "slow-host"], not_judged=not_judged(events))


MAX_RESULTS = 500  # rows of the run page's table of results; the API has them all


def timeline_page(session: Session, *, run_id: str, first: int, last: int,
                  window: tuple[float, float] | None = None) -> str | None:
    """The whole run binned (every rank, in at most plots.MAX_BINS rows), then the timeline of MPI calls of ranks
    `first` to `last` (at most plots.MAX_TRACKS copies drawn), in `window` (seconds since the run's first process
    started; None: the whole run)."""
    run = crud.get_run(session, run_id=run_id)
    if run is None:
        return None
    # within the run: the form's fields are bounded by its ranks, and a browser refuses to send a value out of them
    last = min(last, run.nranks - 1)
    first = min(first, last)
    every = [e for e in crud.events(session, run_id=run_id) if e.app_rank is not None]
    keep = {} if window is None else {"start": f"{window[0]:g}", "end": f"{window[1]:g}"}
    b = plots.binned(run.run_dir, run.nranks, every)
    overview = None if b is None else plots.binned_timeline(
        run.run_dir, run.nranks, b, lambda first, last: "?" + urlencode({"first": first, "last": last, **keep}))
    procs = [p for p in crud.procs(session, run_id=run_id) if first <= p.app_rank <= last]
    events = [e for e in every if first <= e.app_rank <= last]
    chart = plots.call_timeline(run.run_dir, {(p.app_rank, p.copy): p.role for p in procs}, events,
                                only={(p.app_rank, p.copy): p.real_rank for p in procs}, window=window,
                                origin=None if b is None else b.origin)
    return _render("timeline.html", title=f"Timeline of ranks {first} to {last} of {run.id}", run=run, first=first,
                   last=last, window=window, overview=overview, chart=chart)


def slowness_chart(procs: list, events: list) -> str | None:
    """DGRP's per-process view: recommended / non-recommended along each process's calls, for the processes that
    were judged (None: none was)."""
    changes: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for e in events:
        if e.kind == "slowness":
            changes.setdefault((e.app_rank, e.copy), []).append((e.call_seq or 0, e.message.split(" at ")[0]))
    unjudged = {(e.app_rank, e.copy) for e in events if e.kind == "perf-not-judged"}
    judged = [p for p in procs if (p.app_rank, p.copy) not in unjudged] if unjudged else procs
    if not any(p.copy > 0 for p in judged):
        return None
    shown, left = changed_rows(judged, changes)
    rows = [(f"rank {p.app_rank} copy {p.copy}", p.calls, changes.get((p.app_rank, p.copy), [])) for p in shown]
    if not rows:
        return None
    return plots.status_timeline("processes recommended (green) or not (red), by call"
                                 + (f"; the {left} others were recommended throughout" if left else ""), rows,
                                 "recommended", gid="slowness")


MAX_ROWS = 32  # processes drawn in a status timeline before only those that changed are


def changed_rows(procs: list, changes: dict[tuple[int, int], list]) -> tuple[list, int]:
    """(the processes to draw, how many were left out): all of them up to MAX_ROWS, else those with a change (the
    first MAX_ROWS of them): 256 green bars say less than a sentence."""
    if len(procs) <= MAX_ROWS:
        return procs, 0
    changed = [p for p in procs if (p.app_rank, p.copy) in changes][:MAX_ROWS]
    return changed, len(procs) - len(changed)


def exclusions_chart(procs: list, events: list) -> str | None:
    """SDR: each replica in the job (green) or excluded as slow (red) along its calls (None: none was)."""
    changes: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for e in events:
        if e.kind == "exclusion":
            status = "in the job" if e.message.startswith("taken back") else e.message.split(" (")[0]
            changes.setdefault((e.app_rank, e.copy), []).append((e.call_seq or 0, status))
    if not changes:
        return None
    shown, left = changed_rows(procs, changes)
    rows = [(f"rank {p.app_rank} replica {p.copy}", p.calls, changes.get((p.app_rank, p.copy), [])) for p in shown]
    return plots.status_timeline("SDR replicas in the job (green) or excluded as slow (red), by call"
                                 + (f"; the {left} others stayed in the job" if left else ""), rows,
                                 "in the job", gid="exclusions")


def rank_page(session: Session, *, run_id: str, rank: int) -> str | None:
    run = crud.get_run(session, run_id=run_id)
    if run is None or not 0 <= rank < run.nranks:
        return None
    procs = crud.procs(session, run_id=run_id, app_rank=rank)
    copies = [p.copy for p in procs]
    sections = [html for _, html in role_sections("rank", session, run, rank, procs, procs=procs)]
    sums = crud.call_summaries(session, run_id=run_id, app_rank=rank)
    functions = sorted({s.function for s in sums})
    calls = {(s.copy, s.function): s.calls for s in sums}
    # copies make the same calls by construction: bars that only repeat each other are not drawn
    same_calls = len({tuple(sorted((f, n) for (k, f), n in calls.items() if k == c)) for c in copies}) <= 1
    calls_chart = None if not functions or same_calls and len(copies) > 1 \
        else plots.calls_per_function(rank, functions, copies, calls)
    marks = [(e.call_seq or 0, e.copy, e.kind) for e in crud.events(session, run_id=run_id, app_rank=rank)
             if e.kind in ("divergence", "corrected")]
    timeline = plots.divergence_marks(rank, copies, max((p.calls for p in procs), default=1), marks) if marks \
        else None
    return _render("rank.html", title=f"Rank {rank} of {run.id}", run=run, rank=rank, procs=procs,
                   role_sections=sections, calls_chart=calls_chart, timeline=timeline,
                   same_calls=same_calls, nfunctions=len(functions), compared=rankview.compare(procs, sums),
                   top=rankview.TOP_FUNCTIONS, far=FAR)


def program_page(session: Session, *, program: str) -> str | None:
    groups = crud.series(session, program=program)
    if not groups:
        return None
    charts_ = [plots.wall_times([(time.strftime("%m-%d %H:%M:%S", time.localtime(r.started_at)), r.duration,
                                  "injection" if crud.deliberate(r) else "diverged" if r.diverged else "")
                                 for r in s.runs], gid=f"series-{i}") for i, s in enumerate(groups)]
    return _render("program.html", title=program, program=program, groups=list(zip(groups, charts_, strict=True)),
                   deliberate=crud.deliberate)


def error_page(*, status: int, detail: str) -> str:
    """A page's error, said as a page: what went wrong and the way back to the runs."""
    return _render("error.html", title=f"Error {status}", status=status, detail=detail)


def login_page(*, back: str, error: str | None = None) -> str:
    """The form a browser logs in with on a server whose reads need a token."""
    return _render("login.html", title="Log in", back=back, error=error)
