"""The JSON API: uploading a run, and reading runs, processes, events, metrics and a program's history."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from echo.collectors import roles
from echo.server import crud, schemas
from echo.server.deps import reader, settings, token_of
from echo.server.queryargs import count_arg, date_arg, flag_arg
from echo.server.tokens import is_valid
from echo.server.upload import UPLOAD_PREFIX, UploadError, receive

router = APIRouter()


def run_or_404(s: Session, run_id: str) -> object:
    run = crud.get_run(s, run_id=run_id)
    if run is None:
        raise HTTPException(404, f"no run {run_id!r}")
    return run


def store_upload(request: Request, path: Path, run_id: str) -> str:
    state = request.app.state
    with state.ingest_lock:  # one ingest at a time: the store has one writer (SQLite) or gains nothing
        return receive(path, run_id, state.settings.storage, state.engine)


@router.put("/api/runs/{run_id}", response_model=schemas.Stored, status_code=201)
async def upload(run_id: str, request: Request, authorization: str | None = Header(None)) -> schemas.Stored:
    """Store a run: the body is its run directory as a gzip'd tar. Idempotent by run id; all or nothing."""
    with Session(request.app.state.engine) as s:  # closed before the body streams in: no transaction across awaits
        valid = is_valid(s, token=token_of(authorization))
    if not valid:
        raise HTTPException(401, "uploads need a valid token: create one with `mpiecho token create` and send "
                                 "Authorization: Bearer <token>")
    limit, store_dir = settings(request).max_upload, settings(request).storage
    declared = int(request.headers.get("content-length") or 0)
    if declared > limit:
        raise HTTPException(413, f"the upload is {declared} bytes; this server takes at most {limit}")
    store_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=store_dir, prefix=UPLOAD_PREFIX, suffix=".tgz") as tmp:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise HTTPException(413, f"the upload is over {limit} bytes, this server's limit")
            tmp.write(chunk)
        tmp.flush()
        try:  # in a worker thread: the server keeps answering while a large run is ingested
            stored = await run_in_threadpool(store_upload, request, Path(tmp.name), run_id)
        except UploadError as e:
            raise HTTPException(e.status, str(e)) from None
    return schemas.Stored(run_id=stored)


@router.get("/api/runs", response_model=list[schemas.RunOut])
def runs(s: Session = Depends(reader), program: str | None = None, mode: str | None = None, status: str | None = None,
         diverged: str | None = None, since: str | None = None, until: str | None = None,
         limit: str | None = None, offset: str | None = None) -> list:
    """The runs that match, newest first. since and until as the list page takes them: YYYY-MM-DD (until: to the
    end of that day), YYYY-MM-DDTHH:MM, or a Unix time; limit from 1 to 10000 (100), offset from 0."""
    return crud.list_runs(s, program=program or None, mode=mode or None, status=status or None,
                          diverged=flag_arg("diverged", diverged), since=date_arg("since", since),
                          until=date_arg("until", until, end_of_day=True), limit=count_arg("limit", limit, 100),
                          offset=count_arg("offset", offset, 0, low=0, high=10**9))


@router.get("/api/runs/{run_id}", response_model=schemas.RunOut)
def run(run_id: str, s: Session = Depends(reader)) -> object:
    return run_or_404(s, run_id)


@router.get("/api/runs/{run_id}/procs", response_model=list[schemas.ProcOut])
def procs(run_id: str, s: Session = Depends(reader)) -> list:
    run_or_404(s, run_id)
    return crud.procs(s, run_id=run_id)


@router.get("/api/runs/{run_id}/events", response_model=list[schemas.EventOut])
def events(run_id: str, kind: str | None = None, s: Session = Depends(reader)) -> list:
    run_or_404(s, run_id)
    return crud.events(s, run_id=run_id, kind=kind)


@router.get("/api/runs/{run_id}/metrics", response_model=list[schemas.MetricOut])
def metrics(run_id: str, prefix: str = "", s: Session = Depends(reader)) -> list:
    """The roles' results, each a named number of a copy (or of a rank: copy -1), by name prefix."""
    run_or_404(s, run_id)
    return crud.metrics(s, run_id=run_id, prefix=prefix)


def role_answer(answer: Callable[[Session, str], dict]) -> Callable[..., dict]:
    """The route of a role's answer (echo/collectors/roles.py's "api"): the run must exist, then the role answers."""

    def route(run_id: str, s: Session = Depends(reader)) -> dict:
        run_or_404(s, run_id)
        return answer(s, run_id)

    route.__doc__ = answer.__doc__
    return route


for name, answer in roles.api().items():  # PAPI's counters: /api/runs/RUN/counters
    router.add_api_route(f"/api/runs/{{run_id}}/{name}", role_answer(answer), methods=["GET"], name=name)


@router.get("/api/runs/{run_id}/divergences", response_model=schemas.Divergences)
def divergences(run_id: str, s: Session = Depends(reader)) -> dict:
    run_or_404(s, run_id)
    return crud.divergences(s, run_id=run_id)


@router.get("/api/programs/{program}/history", response_model=list[schemas.RunOut])
def history(program: str, s: Session = Depends(reader)) -> list:
    """Every run of the program (matched by its name exactly), oldest first; 404 for a program with no runs, as
    its page."""
    runs = crud.history(s, program=program)
    if not runs:
        raise HTTPException(404, f"no runs of {program!r}")
    return runs


@router.get("/api/programs/{program}/series", response_model=list[schemas.SeriesOut])
def series(program: str, s: Session = Depends(reader)) -> list[dict]:
    """The program's runs grouped by configuration, as the history page shows them (newest series first)."""
    groups = crud.series(s, program=program)
    if not groups:
        raise HTTPException(404, f"no runs of {program!r}")
    return [{"label": x.label, "runs": [r.id for r in x.runs],
             "deliberate": [r.id for r in x.runs if crud.deliberate(r)],
             "diverging_since": x.diverging_since.id if x.diverging_since else None,
             "clean_since": x.clean_since.id if x.clean_since else None}
            for x in groups]
