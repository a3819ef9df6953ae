"""The web reports, rendered on the server from the store (templates in web/; each role's sections from its folder)."""

from __future__ import annotations

import time
from collections.abc import Callable

from jinja2 import BaseLoader, ChoiceLoader, Environment, FileSystemLoader, TemplateNotFound, select_autoescape
from sqlalchemy.orm import Session

from collectors import roles
from echo.report import bad_events, copies_text, in_order, injections_brief, not_judged, roles_text
from echo.resources import WEB_DIR
from server import crud, plots


class RoleTemplates(BaseLoader):
    """A role's templates, "ROLE/FILE", read from the role's own folder (collectors/roles.py's "pages"), wherever
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


def runs_page(session: Session, *, filters: dict) -> str:
    runs = crud.list_runs(session, **{k: v for k, v in filters.items() if k != "since_text"})
    return _render("runs.html", title="Runs", runs=runs, f=filters)


def run_page(session: Session, *, run_id: str, standalone: bool = False) -> str | None:
    run = crud.get_run(session, run_id=run_id)
    if run is None:
        return None
    procs = crud.procs(session, run_id=run_id)
    events = in_order(crud.events(session, run_id=run_id))
    div = crud.divergences(session, run_id=run_id)
    bad = {(d["app_rank"], d["copy"]): d for d in div["copies"]}
    maxcopies = max(run.copies)
    matrix = []
    for rank in range(run.nranks):
        row: list[dict | None] = [None] * maxcopies
        for p in procs:
            if p.app_rank == rank:
                d = bad.get((rank, p.copy))
                status = "ok" if not d else ("fixed" if d["corrected"] == d["count"] else "bad")
                note = (f"diverged at call #{d['first_call']}" if status == "bad" else "corrected") if d else ""
                row[p.copy] = dict(copy=p.copy, role=p.role, state=p.state, calls=p.calls, mpi_time=p.mpi_time,
                                   status=status if p.state == "finalized" or d else "bad", note=note)
        matrix.append((rank, row))
    # the metrics no role shows in a section of its own, per-function values (NAME in FUNCTION) left out
    apart = roles.results_apart()
    results = [m for m in crud.metrics(session, run_id=run_id) if not (apart and m.name.startswith(apart))
               and " in " not in m.name]
    perf_chart = slowness_chart(procs, events)
    exclusion_chart = exclusions_chart(procs, events)
    time_chart = plots.mpi_times(procs, crud.call_summaries(session, run_id=run_id))
    root = "/" if not standalone else ""
    sections = role_sections("run", session, run, procs, events, standalone=standalone, root=root)
    return _render("run.html", standalone=standalone, root=root, title=f"Run {run.id}",
                   run=run, run_procs=procs, matrix=matrix, maxcopies=maxcopies, events=events, div=div,
                   role_sections=sections, results=results, results_title=results_title(), bad_events=bad_events(),
                   time_chart=time_chart, perf_chart=perf_chart, exclusion_chart=exclusion_chart,
                   call_timeline=plots.call_timeline(run.run_dir, {(p.app_rank, p.copy): p.role for p in procs},
                                                     events),
                   slow_hosts=[e for e in events if e.kind == "slow-host"], not_judged=not_judged(events))


def slowness_chart(procs: list, events: list) -> str | None:
    """DGRP's per-process view: recommended / non-recommended along each process's calls, for the processes that
    were judged (None: none was)."""
    changes: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for e in events:
        if e.kind == "slowness":
            changes.setdefault((e.app_rank, e.copy), []).append((e.call_seq or 0, e.message.split(" at ")[0]))
    unjudged = {(e.app_rank, e.copy) for e in events if e.kind == "perf-not-judged"}
    judged = [p for p in procs if (p.app_rank, p.copy) not in unjudged]
    if not any(p.copy > 0 for p in judged):
        return None
    rows = [(f"rank {p.app_rank} copy {p.copy}", p.calls, changes.get((p.app_rank, p.copy), [])) for p in judged]
    return plots.status_timeline("processes recommended (green) or not (red), by call", rows, "recommended",
                                 gid="slowness")


def exclusions_chart(procs: list, events: list) -> str | None:
    """SDR: each replica in the job (green) or excluded as slow (red) along its calls (None: none was)."""
    changes: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for e in events:
        if e.kind == "exclusion":
            status = "in the job" if e.message.startswith("taken back") else e.message.split(" (")[0]
            changes.setdefault((e.app_rank, e.copy), []).append((e.call_seq or 0, status))
    if not changes:
        return None
    rows = [(f"rank {p.app_rank} replica {p.copy}", p.calls, changes.get((p.app_rank, p.copy), [])) for p in procs]
    return plots.status_timeline("SDR replicas in the job (green) or excluded as slow (red), by call", rows,
                                 "in the job", gid="exclusions")


def rank_page(session: Session, *, run_id: str, rank: int) -> str | None:
    run = crud.get_run(session, run_id=run_id)
    if run is None or not 0 <= rank < run.nranks:
        return None
    procs = [p for p in crud.procs(session, run_id=run_id) if p.app_rank == rank]
    copies = [p.copy for p in procs]
    sections = [html for _, html in role_sections("rank", session, run, rank, procs, procs=procs)]
    sums = crud.call_summaries(session, run_id=run_id, app_rank=rank)
    functions = sorted({s.function for s in sums})
    calls = {(s.copy, s.function): s.calls for s in sums}
    # copies make the same calls by construction: bars that only repeat each other are not drawn
    same_calls = len({tuple(sorted((f, n) for (k, f), n in calls.items() if k == c)) for c in copies}) <= 1
    calls_chart = None if not functions or same_calls and len(copies) > 1 \
        else plots.calls_per_function(rank, functions, copies, calls)
    marks = [(e.call_seq or 0, e.copy, e.kind) for e in crud.events(session, run_id=run_id)
             if e.app_rank == rank and e.kind in ("divergence", "corrected")]
    timeline = plots.divergence_marks(rank, copies, max((p.calls for p in procs), default=1), marks) if marks \
        else None
    return _render("rank.html", title=f"Rank {rank} of {run.id}", run=run, rank=rank, procs=procs,
                   role_sections=sections, calls_chart=calls_chart, timeline=timeline,
                   same_calls=same_calls, nfunctions=len(functions))


def program_page(session: Session, *, program: str) -> str | None:
    groups = crud.series(session, program=program)
    if not groups:
        return None
    charts_ = [plots.wall_times([(time.strftime("%m-%d %H:%M:%S", time.localtime(r.started_at)), r.duration,
                                  "injection" if crud.deliberate(r) else "diverged" if r.diverged else "")
                                 for r in s.runs], gid=f"series-{i}") for i, s in enumerate(groups)]
    return _render("program.html", title=program, program=program, groups=list(zip(groups, charts_, strict=True)),
                   deliberate=crud.deliberate)


def login_page(*, back: str, error: str | None = None) -> str:
    """The form a browser logs in with on a server whose reads need a token."""
    return _render("login.html", title="Log in", back=back, error=error)
