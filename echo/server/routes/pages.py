"""The web pages (rendered by echo/server/pages.py): the runs, a run, a rank of a run, a run's timeline, a program's
runs; echo's documents (docs/NAME.md, which the pages name), as text. Their errors are pages too (html_error)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from sqlalchemy.orm import Session

from echo import userdocs
from echo.server import pages
from echo.server.deps import page_reader
from echo.server.queryargs import count_arg, date_arg, flag_arg, seconds_arg

router = APIRouter()


def html_or_404(html: str | None, what: str) -> HTMLResponse:
    if html is None:
        raise HTTPException(404, f"no {what}")
    return HTMLResponse(html)


async def html_error(request: Request, e: Exception) -> Response:
    """An error of a page as a page (a browser shows it, with a way back); of the API as FastAPI says it, JSON."""
    path = request.url.path
    api = path.startswith(("/api/", "/docs-files", "/openapi")) or path == "/docs"  # /docs/NAME.md: a document
    if isinstance(e, RequestValidationError):
        if api:
            return await request_validation_exception_handler(request, e)
        status = 422
        detail = "; ".join(f"{'.'.join(str(x) for x in err['loc'][1:])}: {err['msg']}" for err in e.errors())
    else:
        if api:
            return await http_exception_handler(request, e)
        status, detail = e.status_code, str(e.detail)
    return HTMLResponse(pages.error_page(status=status, detail=detail), status_code=status,
                        headers=getattr(e, "headers", None))


@router.get("/", response_class=HTMLResponse)
def index(s: Session = Depends(page_reader), program: str | None = None, mode: str | None = None,
          status: str | None = None, diverged: str | None = None, since: str | None = None, until: str | None = None,
          page: str | None = None) -> HTMLResponse:
    f = {"program": program or None, "mode": mode or None, "status": status or None,
         "diverged": flag_arg("diverged", diverged), "since": date_arg("since", since),
         "until": date_arg("until", until, end_of_day=True), "since_text": since, "until_text": until}
    return HTMLResponse(pages.runs_page(s, filters=f, page=count_arg("page", page, 1, high=10**9)))


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_html(run_id: str, s: Session = Depends(page_reader), page: str | None = None) -> HTMLResponse:
    return html_or_404(pages.run_page(s, run_id=run_id, page=count_arg("page", page, 1, high=10**9)),
                       f"run {run_id!r}")


@router.get("/runs/{run_id}/timeline", response_class=HTMLResponse)
def timeline_html(run_id: str, s: Session = Depends(page_reader), first: str | None = None,
                  last: str | None = None, start: str | None = None, end: str | None = None) -> HTMLResponse:
    a = count_arg("first", first, 0, low=0, high=10**9)
    b = count_arg("last", last, a + 7, low=a, high=10**9)
    t0, t1 = seconds_arg("start", start), seconds_arg("end", end)
    if (t0 is None) != (t1 is None) or t0 is not None and t1 <= t0:
        raise HTTPException(422, f"start={start or ''!r}, end={end or ''!r}: give both, the end after the start "
                                 "(seconds since the run's first process started), or neither (the whole run)")
    window = None if t0 is None else (t0, t1)
    return html_or_404(pages.timeline_page(s, run_id=run_id, first=a, last=b, window=window), f"run {run_id!r}")


@router.get("/runs/{run_id}/ranks/{rank}", response_class=HTMLResponse)
def rank_html(run_id: str, rank: int, s: Session = Depends(page_reader)) -> HTMLResponse:
    return html_or_404(pages.rank_page(s, run_id=run_id, rank=rank), f"rank {rank} in run {run_id!r}")


@router.get("/programs/{program}", response_class=HTMLResponse)
def program_html(program: str, s: Session = Depends(page_reader)) -> HTMLResponse:
    return html_or_404(pages.program_page(s, program=program), f"runs of {program!r}")


@router.get("/docs/{name}", response_class=PlainTextResponse)
def document(name: str) -> PlainTextResponse:
    """A document the pages link to (/docs/sdr.md), as the wheel carries it: Markdown, read as text."""
    try:
        return PlainTextResponse(userdocs.read(name))
    except LookupError as e:
        raise HTTPException(404, str(e)) from None
