"""The echo server: `mpiecho serve`. Thin routes over server/crud.py and server/pages.py.

Settings (environment): ECHO_DB (store URL; default the local SQLite file), ECHO_SERVER_STORAGE (where
uploaded runs' files go), ECHO_SERVER_READ_TOKEN=1 (reads need a token too), ECHO_SERVER_MAX_UPLOAD (bytes,
default 4 GiB).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, quote

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from swagger_ui_bundle import swagger_ui_path

from echo.resources import WEB_DIR
from echo.store.db import default_url, open_store
from server import crud, pages, schemas
from server.tokens import is_valid
from server.upload import UploadError, receive

LOGIN_COOKIE = "echo_token"  # the token a browser logged in with (read-token servers)


class LoginNeeded(Exception):
    """A page was asked for without a token on a read-token server: the browser goes to /login, then back."""

    def __init__(self, back: str) -> None:
        super().__init__(back)
        self.back = back


def local_path(url: str) -> str:
    """Where to go after logging in: a path on this server, never another site."""
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/"


def create_app(db_url: str | None = None, storage: str | None = None, read_token: bool | None = None,
               max_upload: int | None = None) -> FastAPI:
    db_url = db_url or default_url()
    engine: Engine = open_store(db_url)
    store_dir = Path(storage or os.environ.get("ECHO_SERVER_STORAGE") or Path(db_url.removeprefix("sqlite:///")).parent
                     / "server-runs").absolute()
    need_read_token = read_token if read_token is not None else os.environ.get("ECHO_SERVER_READ_TOKEN") == "1"
    limit = max_upload or int(os.environ.get("ECHO_SERVER_MAX_UPLOAD", str(4 << 30)))
    app = FastAPI(title="echo", description="Runs of MPI programs with cloned ranks: records, divergence, reports.",
                  docs_url=None, redoc_url=None)  # /docs below: Swagger UI's files from this server, not a CDN
    app.mount("/static", StaticFiles(directory=WEB_DIR / "static"), name="static")
    app.mount("/docs-files", StaticFiles(directory=swagger_ui_path), name="docs-files")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="echo API", swagger_js_url=
                                   "/docs-files/swagger-ui-bundle.js", swagger_css_url="/docs-files/swagger-ui.css",
                                   swagger_favicon_url="/docs-files/favicon-32x32.png")

    def session() -> Iterator[Session]:
        with Session(engine) as s:
            yield s

    def token_of(authorization: str | None) -> str | None:
        return authorization.removeprefix("Bearer ").strip() if authorization else None

    def may_read(s: Session, request: Request, authorization: str | None) -> bool:
        """Reads are open, or need a token: in the Authorization header, or the login page's cookie."""
        return not need_read_token or is_valid(s, token=token_of(authorization) or request.cookies.get(LOGIN_COOKIE))

    def reader(request: Request, s: Session = Depends(session), authorization: str | None = Header(None)) -> Session:
        if not may_read(s, request, authorization):
            raise HTTPException(401, "reading needs a token on this server: send Authorization: Bearer <token> "
                                     "(a browser logs in at /login)")
        return s

    def page_reader(request: Request, s: Session = Depends(session),
                    authorization: str | None = Header(None)) -> Session:
        """As reader, for the pages: a browser without a token is sent to the login page, not shown JSON."""
        if not may_read(s, request, authorization):
            raise LoginNeeded(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        return s

    @app.exception_handler(LoginNeeded)
    def to_login(_request: Request, e: LoginNeeded) -> RedirectResponse:
        return RedirectResponse(f"/login?next={quote(e.back)}", status_code=303)

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_form(next: str = "/") -> HTMLResponse:  # noqa: A002 (the query parameter's name)
        return HTMLResponse(pages.login_page(back=local_path(next)))

    @app.post("/login", response_class=HTMLResponse, response_model=None, include_in_schema=False)
    async def login(request: Request) -> HTMLResponse | RedirectResponse:
        form = parse_qs((await request.body()).decode(errors="replace"))
        token, back = form.get("token", [""])[0].strip(), local_path(form.get("next", ["/"])[0])
        with Session(engine) as s:
            valid = is_valid(s, token=token)
        if not valid:
            return HTMLResponse(pages.login_page(back=back, error="This token is not valid on this server."), 401)
        answer = RedirectResponse(back, status_code=303)
        answer.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict")
        return answer

    @app.get("/api/token")
    def token_check(s: Session = Depends(session), authorization: str | None = Header(None)) -> dict:
        """Whether the token sent (Authorization: Bearer) may upload: `echorun --server` asks before a job starts."""
        if not is_valid(s, token=token_of(authorization)):
            raise HTTPException(401, "this token is not valid on this server: create one with `mpiecho token "
                                     "create` and send Authorization: Bearer <token>")
        return {"valid": True}

    def run_or_404(s: Session, run_id: str) -> object:
        run = crud.get_run(s, run_id=run_id)
        if run is None:
            raise HTTPException(404, f"no run {run_id!r}")
        return run

    ingest_lock = threading.Lock()  # one ingest at a time: the store has one writer (SQLite) or gains nothing

    def store_upload(path: Path, run_id: str) -> str:
        with ingest_lock:
            return receive(path, run_id, store_dir, engine)

    @app.put("/api/runs/{run_id}", response_model=schemas.Stored, status_code=201)
    async def upload(run_id: str, request: Request, authorization: str | None = Header(None)) -> schemas.Stored:
        """Store a run: the body is its run directory as a gzip'd tar. Idempotent by run id; all or nothing."""
        with Session(engine) as s:  # closed before the body streams in: no transaction stays open across awaits
            valid = is_valid(s, token=token_of(authorization))
        if not valid:
            raise HTTPException(401, "uploads need a valid token: create one with `mpiecho token create` and send "
                                     "Authorization: Bearer <token>")
        declared = int(request.headers.get("content-length") or 0)
        if declared > limit:
            raise HTTPException(413, f"the upload is {declared} bytes; this server takes at most {limit}")
        store_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=store_dir, suffix=".tgz") as tmp:
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise HTTPException(413, f"the upload is over {limit} bytes, this server's limit")
                tmp.write(chunk)
            tmp.flush()
            try:  # in a worker thread: the server keeps answering while a large run is ingested
                stored = await run_in_threadpool(store_upload, Path(tmp.name), run_id)
            except UploadError as e:
                raise HTTPException(e.status, str(e)) from None
        return schemas.Stored(run_id=stored)

    @app.get("/api/runs", response_model=list[schemas.RunOut])
    def runs(s: Session = Depends(reader), program: str | None = None, mode: str | None = None,
             diverged: bool | None = None, since: float | None = None, until: float | None = None,
             limit: int = Query(100, le=10_000)) -> list:
        return crud.list_runs(s, program=program, mode=mode, diverged=diverged, since=since, until=until,
                              limit=limit)

    @app.get("/api/runs/{run_id}", response_model=schemas.RunOut)
    def run(run_id: str, s: Session = Depends(reader)) -> object:
        return run_or_404(s, run_id)

    @app.get("/api/runs/{run_id}/procs", response_model=list[schemas.ProcOut])
    def procs(run_id: str, s: Session = Depends(reader)) -> list:
        run_or_404(s, run_id)
        return crud.procs(s, run_id=run_id)

    @app.get("/api/runs/{run_id}/events", response_model=list[schemas.EventOut])
    def events(run_id: str, kind: str | None = None, s: Session = Depends(reader)) -> list:
        run_or_404(s, run_id)
        return crud.events(s, run_id=run_id, kind=kind)

    @app.get("/api/runs/{run_id}/metrics", response_model=list[schemas.MetricOut])
    def metrics(run_id: str, prefix: str = "", s: Session = Depends(reader)) -> list:
        """Role results: counters (papi ...), Valgrind (memcheck/callgrind/...), sensitivity (digits ...)."""
        run_or_404(s, run_id)
        return crud.metrics(s, run_id=run_id, prefix=prefix)

    @app.get("/api/runs/{run_id}/counters")
    def counters(run_id: str, s: Session = Depends(reader)) -> dict:
        """Per rank: every counted event, from the copy that counted it, and the anchors' spread."""
        run_or_404(s, run_id)
        return {str(k): v for k, v in crud.counters(s, run_id=run_id).items()}

    @app.get("/api/runs/{run_id}/divergences", response_model=schemas.Divergences)
    def divergences(run_id: str, s: Session = Depends(reader)) -> dict:
        run_or_404(s, run_id)
        return crud.divergences(s, run_id=run_id)

    @app.get("/api/programs/{program}/history", response_model=list[schemas.RunOut])
    def history(program: str, s: Session = Depends(reader)) -> list:
        return crud.history(s, program=program)

    def page(html: str | None, what: str) -> HTMLResponse:
        if html is None:
            raise HTTPException(404, f"no {what}")
        return HTMLResponse(html)

    @app.get("/", response_class=HTMLResponse)
    def index(s: Session = Depends(page_reader), program: str | None = None, mode: str | None = None,
              diverged: str | None = None, since: str | None = None) -> HTMLResponse:
        try:
            start = datetime.fromisoformat(since).timestamp() if since else None
        except ValueError:
            raise HTTPException(422, f"since={since!r} is not a date: give one as YYYY-MM-DD") from None
        f = {"program": program or None, "mode": mode or None,
             "diverged": {"true": True, "false": False}.get(diverged or ""), "since": start, "since_text": since}
        return HTMLResponse(pages.runs_page(s, filters=f))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_html(run_id: str, s: Session = Depends(page_reader)) -> HTMLResponse:
        return page(pages.run_page(s, run_id=run_id), f"run {run_id!r}")

    @app.get("/runs/{run_id}/ranks/{rank}", response_class=HTMLResponse)
    def rank_html(run_id: str, rank: int, s: Session = Depends(page_reader)) -> HTMLResponse:
        return page(pages.rank_page(s, run_id=run_id, rank=rank), f"rank {rank} in run {run_id!r}")

    @app.get("/programs/{program}", response_class=HTMLResponse)
    def program_html(program: str, s: Session = Depends(page_reader)) -> HTMLResponse:
        return page(pages.program_page(s, program=program), f"runs of {program!r}")

    return app
