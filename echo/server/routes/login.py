"""Logging a browser in (read-token servers) and checking an upload token."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Header, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session

from echo.server import pages
from echo.server.deps import LOGIN_COOKIE, session, token_of
from echo.server.tokens import is_valid

router = APIRouter()


def local_path(url: str) -> str:
    """Where to go after logging in: a path on this server, never another site."""
    return url if url.startswith("/") and not url.startswith("//") and "\\" not in url else "/"


@router.get("/login", response_class=HTMLResponse, include_in_schema=False)
def login_form(next: str = "/") -> HTMLResponse:  # noqa: A002 (the query parameter's name)
    return HTMLResponse(pages.login_page(back=local_path(next)))


@router.post("/login", response_class=HTMLResponse, response_model=None, include_in_schema=False)
async def login(request: Request) -> HTMLResponse | RedirectResponse:
    form = parse_qs((await request.body()).decode(errors="replace"))
    token, back = form.get("token", [""])[0].strip(), local_path(form.get("next", ["/"])[0])
    with Session(request.app.state.engine) as s:
        valid = is_valid(s, token=token)
    if not valid:
        return HTMLResponse(pages.login_page(back=back, error="This token is not valid on this server."), 401)
    answer = RedirectResponse(back, status_code=303)
    answer.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict")
    return answer


@router.get("/api/token")
def token_check(s: Session = Depends(session), authorization: str | None = Header(None)) -> dict:
    """Whether the token sent (Authorization: Bearer) may upload: `echorun --server` asks before a job starts."""
    if not is_valid(s, token=token_of(authorization)):
        raise HTTPException(401, "this token is not valid on this server: create one with `mpiecho token "
                                 "create` and send Authorization: Bearer <token>")
    return {"valid": True}
