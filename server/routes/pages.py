"""The web pages (rendered by server/pages.py): the runs, a run, a rank of a run, a program's runs."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server import pages
from server.deps import page_reader

router = APIRouter()


def page(html: str | None, what: str) -> HTMLResponse:
    if html is None:
        raise HTTPException(404, f"no {what}")
    return HTMLResponse(html)


@router.get("/", response_class=HTMLResponse)
def index(s: Session = Depends(page_reader), program: str | None = None, mode: str | None = None,
          diverged: str | None = None, since: str | None = None) -> HTMLResponse:
    try:
        start = datetime.fromisoformat(since).timestamp() if since else None
    except ValueError:
        raise HTTPException(422, f"since={since!r} is not a date: give one as YYYY-MM-DD") from None
    f = {"program": program or None, "mode": mode or None,
         "diverged": {"true": True, "false": False}.get(diverged or ""), "since": start, "since_text": since}
    return HTMLResponse(pages.runs_page(s, filters=f))


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_html(run_id: str, s: Session = Depends(page_reader)) -> HTMLResponse:
    return page(pages.run_page(s, run_id=run_id), f"run {run_id!r}")


@router.get("/runs/{run_id}/ranks/{rank}", response_class=HTMLResponse)
def rank_html(run_id: str, rank: int, s: Session = Depends(page_reader)) -> HTMLResponse:
    return page(pages.rank_page(s, run_id=run_id, rank=rank), f"rank {rank} in run {run_id!r}")


@router.get("/programs/{program}", response_class=HTMLResponse)
def program_html(program: str, s: Session = Depends(page_reader)) -> HTMLResponse:
    return page(pages.program_page(s, program=program), f"runs of {program!r}")
