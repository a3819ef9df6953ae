"""Opening the store: a SQLite file by default, any SQLAlchemy URL by setting,
migrated to the newest schema with Alembic on open. SQLAlchemy is imported where a store is opened, not with this
module: echorun checks a SQLite store before its job (check_store) without it, which saves a trivial run a fifth
of a second of its own time (bench/results/startup.md)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from echo.runformat.runfiles import cannot_create, runs_root

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.exc import SQLAlchemyError

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class StoreError(RuntimeError):
    """The store cannot be opened or read: one line naming the store and what to do."""


class NoStore(StoreError):
    """A command that only reads found no store: reading never creates one."""


def default_url() -> str:
    """$ECHO_DB, else the SQLite file echo.db beside the run directories."""
    return os.environ.get("ECHO_DB") or f"sqlite:///{runs_root() / 'echo.db'}"


def head_revision() -> str | None:
    """The newest revision of the migrations, read from their files (`revision = "0005"`, `down_revision = ...`):
    the one no other revision follows; None when they do not make one line (Alembic then decides)."""
    revisions, follow = set(), set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        text = path.read_text()
        rev, down = re.search(r'^revision = "(\w+)"$', text, re.M), re.search(r'^down_revision = "(\w+)"$', text, re.M)
        if rev is None:
            return None
        revisions.add(rev[1])
        if down:
            follow.add(down[1])
    heads = revisions - follow
    return heads.pop() if len(heads) == 1 else None


def _at_head(engine: Engine) -> bool:
    """Whether the store is at the newest schema already: Alembic (about a third of a second to load, most of a
    stored trivial run's own time) is then not needed."""
    from sqlalchemy import inspect, text

    head = head_revision()
    with engine.connect() as conn:
        if head is None or not inspect(conn).has_table("alembic_version"):
            return False
        return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))] == [head]


def migrate(engine: Engine) -> None:
    if _at_head(engine):
        return
    from alembic import command  # here: a store at the newest schema never loads Alembic
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def open_store(url: str | None = None, create: bool = True) -> Engine:
    """The store at `url`, migrated to the newest schema. create=False (commands that only read): a SQLite file
    that does not exist is an error, and nothing is created on disk."""
    from sqlalchemy import event
    from sqlalchemy.exc import SQLAlchemyError

    url = url or default_url()
    sqlite_file = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
    if sqlite_file and not create and not sqlite_file.is_file():
        raise NoStore(f"no runs stored yet: there is no store at {sqlite_file} (echorun stores every run there; "
                      "name another with --db or $ECHO_DB)")
    engine = engine_of(url)
    if sqlite_file:
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)
    if engine.dialect.name == "sqlite":
        @event.listens_for(engine, "connect")
        def _fk(dbapi_conn, _record) -> None:  # noqa: ANN001 (DB-API objects)
            dbapi_conn.execute("PRAGMA foreign_keys=ON")
    try:
        migrate(engine)
    except SQLAlchemyError as e:
        raise StoreError(failure(url, e)) from None
    return engine


def engine_of(url: str) -> Engine:
    """The engine of `url` (nothing is opened yet); a URL no dialect knows or a driver that is missing is a
    StoreError naming the fix."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        return create_engine(url)
    except (ArgumentError, NoSuchModuleError) as e:
        raise StoreError(f"{url!r} is not a database URL echo can open ({first_line(e)}): give e.g. "
                         "sqlite:////path/to/echo.db or postgresql+psycopg://user@host/db") from None
    except ImportError as e:
        fix = " (install it with pip)"
        if url.startswith("postgresql"):  # the extra installs psycopg (3)
            fix = ": pip install 'echo-mpi[postgresql]'" + (
                "" if url.startswith(("postgresql+psycopg:", "postgresql:")) else
                " and name its driver, postgresql+psycopg://user@host/db")
        raise StoreError(f"the driver of {describe(url)} is not installed ({e}){fix}") from None


def check_store(url: str) -> None:
    """Before a job: the store the run will go to can take it, found without creating anything (a run is stored
    after its job, when a wrong URL, a missing driver or a file that is no database would lose it). Raises
    StoreError in one line naming the problem and the fix."""
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        if path.is_file():
            _check_sqlite_file(url, path)
        elif path.exists():
            raise StoreError(f"the store {path} is not a file: name a file with --db sqlite:////path/to/echo.db")
        else:
            why = cannot_create(path)
            if why:
                raise StoreError(f"cannot create the store {path}: {why}; name another with --db or $ECHO_DB")
        return
    from sqlalchemy.exc import SQLAlchemyError

    engine = engine_of(url)
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as e:
        raise StoreError(failure(url, e)) from None
    finally:
        engine.dispose()


def _check_sqlite_file(url: str, path: Path) -> None:
    """An existing SQLite file is a database (opened read-only: a check writes nothing)."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            con.execute("PRAGMA schema_version").fetchone()
        finally:
            con.close()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{describe(url)} is not an echo store ({e}): name another file with --db, or move it "
                         "away") from None
    if not os.access(path, os.W_OK):
        raise StoreError(f"the store {path} is read-only here: name another with --db or $ECHO_DB")


def first_line(e: BaseException) -> str:
    """An exception's own message, without SQLAlchemy's SQL and background lines."""
    orig = getattr(e, "orig", None) or e
    return (str(orig).strip().splitlines() or [type(orig).__name__])[0]


def failure(url: str, e: SQLAlchemyError) -> str:
    """What went wrong with the store, in one line, with the fix."""
    from sqlalchemy.exc import DatabaseError, OperationalError

    where = describe(url)
    if isinstance(e, OperationalError) and url.startswith("sqlite"):
        return f"cannot open the SQLite store {where} ({first_line(e)})"
    if isinstance(e, OperationalError):
        return f"cannot reach the database {where} ({first_line(e)}): is its server running, and the URL right?"
    if isinstance(e, DatabaseError):
        return f"{where} is not an echo store ({first_line(e)}): name another file with --db"
    return f"the store {where} failed: {first_line(e)}"


def describe(url: str) -> str:
    """The URL without a password, to print."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # not a URL at all: nothing in it to hide
        return url
