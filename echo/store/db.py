"""Opening the store: a SQLite file by default, any SQLAlchemy URL by setting,
migrated to the newest schema with Alembic on open."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def default_url() -> str:
    """$ECHO_DB, else the SQLite file echo.db beside the run directories."""
    from echo.launch import runs_root

    return os.environ.get("ECHO_DB") or f"sqlite:///{runs_root() / 'echo.db'}"


def migrate(engine: Engine) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class NoStore(LookupError):
    """A read found no store: reading never creates one."""


def open_store(url: str | None = None, create: bool = True) -> Engine:
    """The store at `url` (default_url()), migrated; with create=False (the commands that only read) a SQLite
    file that does not exist is NoStore, not a new empty store."""
    url = url or default_url()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if not create and not path.is_file():
            raise NoStore(f"no runs stored yet: there is no store at {path} (echorun stores every run there; "
                          "--db or ECHO_DB names another)")
        path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _fk(dbapi_conn, _record) -> None:  # noqa: ANN001 (DB-API objects)
            dbapi_conn.execute("PRAGMA foreign_keys=ON")
    migrate(engine)
    return engine


def describe(url: str) -> str:
    """The URL without a password, to print."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
