"""What routes depend on: the store's session, the token a request carries, and whether it may read.

The app keeps its settings, store engine and ingest lock in `app.state` (echo/server/app.py makes them)."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Depends, Header, HTTPException, Request
from sqlalchemy.orm import Session

from echo.server.settings import Settings
from echo.server.tokens import is_valid

LOGIN_COOKIE = "echo_token"  # the token a browser logged in with (read-token servers)


class LoginNeeded(Exception):
    """A page was asked for without a token on a read-token server: the browser goes to /login, then back."""

    def __init__(self, back: str) -> None:
        super().__init__(back)
        self.back = back


def settings(request: Request) -> Settings:
    return request.app.state.settings


def session(request: Request) -> Iterator[Session]:
    with Session(request.app.state.engine) as s:
        yield s


def token_of(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer` header."""
    return authorization.removeprefix("Bearer ").strip() if authorization else None


def may_read(s: Session, request: Request, authorization: str | None) -> bool:
    """Reads are open, or need a token: in the Authorization header, or the login page's cookie."""
    return not settings(request).read_token or is_valid(s, token=token_of(authorization)
                                                        or request.cookies.get(LOGIN_COOKIE))


def reader(request: Request, s: Session = Depends(session), authorization: str | None = Header(None)) -> Session:
    """The session of a request that may read (the API: 401 otherwise)."""
    if not may_read(s, request, authorization):
        raise HTTPException(401, "reading needs a token on this server: send Authorization: Bearer <token> "
                                 "(a browser logs in at /login)")
    return s


def page_reader(request: Request, s: Session = Depends(session), authorization: str | None = Header(None)) -> Session:
    """As reader, for the pages: a browser without a token is sent to the login page, not shown JSON."""
    if not may_read(s, request, authorization):
        raise LoginNeeded(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    return s
