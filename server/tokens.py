"""Upload tokens: created with `mpiecho token create`, only their SHA-256 is stored."""

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
    return session.scalars(select(Token).where(Token.digest == digest(token))).first() is not None
