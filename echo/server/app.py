"""The echo server: `mpiecho serve`. The app is made here from its settings (echo/server/settings.py); its routes are in
echo/server/routes/ (login, api, pages), thin over echo/server/crud.py and echo/server/pages.py; what they depend on
(the session, the token) is in echo/server/deps.py."""

from __future__ import annotations

import threading
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from swagger_ui_bundle import swagger_ui_path

from echo.resources import WEB_DIR
from echo.server.deps import LoginNeeded
from echo.server.routes import api, login, pages
from echo.server.settings import Settings
from echo.server.upload import claim_storage
from echo.store.db import open_store


def create_app(db_url: str | None = None, storage: str | None = None, read_token: bool | None = None,
               max_upload: int | None = None) -> FastAPI:
    """The app over the store at `db_url` (settings not given come from the environment: echo/server/settings.py)."""
    settings = Settings.load(db_url, storage, read_token, max_upload)
    app = FastAPI(title="echo", description="Runs of MPI programs with cloned ranks: records, divergence, reports.",
                  docs_url=None, redoc_url=None)  # /docs below: Swagger UI's files from this server, not a CDN
    app.state.settings = settings
    app.state.engine = open_store(settings.db_url)
    # what uploads cut short by this storage's last server's death left behind, cleaned before any new upload
    app.state.storage_lock, app.state.cleaned = claim_storage(settings.storage)
    app.state.ingest_lock = threading.Lock()
    app.mount("/static", StaticFiles(directory=WEB_DIR / "static"), name="static")
    app.mount("/docs-files", StaticFiles(directory=swagger_ui_path), name="docs-files")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="echo API", swagger_js_url=
                                   "/docs-files/swagger-ui-bundle.js", swagger_css_url="/docs-files/swagger-ui.css",
                                   swagger_favicon_url="/docs-files/favicon-32x32.png")

    @app.exception_handler(LoginNeeded)
    def to_login(_request: Request, e: LoginNeeded) -> RedirectResponse:
        return RedirectResponse(f"/login?next={quote(e.back)}", status_code=303)

    app.add_exception_handler(HTTPException, pages.html_error)  # a page's error is a page, the API's JSON
    app.add_exception_handler(RequestValidationError, pages.html_error)
    for routes in (login, api, pages):
        app.include_router(routes.router)
    return app
