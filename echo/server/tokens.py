"""Upload tokens: created with `mpiecho token create` (only their SHA-256 is stored), listed with `mpiecho token
list`, revoked with `mpiecho token revoke`: a revoked token's row stays, with the time it was revoked (who could
upload, and until when), and the next request with it is refused (every request looks its token up); the runs it
uploaded stay (a run does not name the token that sent it)."""

from __future__ import annotations

import hashlib
import secrets
import time

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.store.models import Token


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(session: Session, *, name: str) -> str:
    token = "echo_" + secrets.token_urlsafe(24)
    session.add(Token(name=name, digest=digest(token), created_at=time.time()))
    session.commit()
    return token


def is_valid(session: Session, *, token: str | None) -> bool:
    if not token:
        return False
    return session.scalars(select(Token).where(Token.digest == digest(token), Token.revoked_at.is_(None))).first() \
        is not None


def list_tokens(session: Session) -> list[Token]:
    """Every token, oldest first, the revoked ones too (their `revoked_at` set)."""
    return list(session.scalars(select(Token).order_by(Token.id)))


class UnknownToken(LookupError):
    """No token, or more than one, answers to what `mpiecho token revoke` was given."""


def revoke_token(session: Session, *, which: str) -> Token:
    """Revoke the token `which` names: its id (as `mpiecho token list` shows it), the token itself, or its name when
    one token alone that is not revoked has it. Its row stays, with the time; returns it."""
    found = (session.scalars(select(Token).where(Token.id == int(which))).all() if which.isdigit() else
             session.scalars(select(Token).where(Token.digest == digest(which))).all()
             or session.scalars(select(Token).where(Token.name == which, Token.revoked_at.is_(None))).all())
    if len(found) != 1:
        raise UnknownToken(f"no token is {which!r}: give an id of `mpiecho token list`, or the token itself"
                           if not found else f"{len(found)} tokens are named {which!r} (ids "
                           f"{', '.join(str(t.id) for t in found)}): give the id of the one to revoke")
    token = found[0]
    if token.revoked_at is not None:
        raise UnknownToken(f"token {token.id} ({token.name}) was revoked already, at "
                           f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(token.revoked_at))}")
    token.revoked_at = time.time()
    session.commit()
    return token
