"""The server's settings, read once when the app is made: arguments of `mpiecho serve`, else the environment.

ECHO_DB (store URL; default the local SQLite file), ECHO_SERVER_STORAGE (where uploaded runs' files go; default
server-runs beside a SQLite store), ECHO_SERVER_READ_TOKEN=1 (reads need a token too), ECHO_SERVER_MAX_UPLOAD
(bytes, default 4 GiB).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from echo.store.db import default_url


@dataclass(frozen=True)
class Settings:
    db_url: str
    storage: Path  # uploaded runs' files
    read_token: bool  # reads need a token too
    max_upload: int  # bytes

    @classmethod
    def load(cls, db_url: str | None = None, storage: str | None = None, read_token: bool | None = None,
             max_upload: int | None = None) -> Settings:
        """The settings given, the environment's for the others."""
        db_url = db_url or default_url()
        store_dir = Path(storage or os.environ.get("ECHO_SERVER_STORAGE")
                         or Path(db_url.removeprefix("sqlite:///")).parent / "server-runs").absolute()
        need_read_token = read_token if read_token is not None else os.environ.get("ECHO_SERVER_READ_TOKEN") == "1"
        limit = max_upload or int(os.environ.get("ECHO_SERVER_MAX_UPLOAD", str(4 << 30)))
        return cls(db_url, store_dir, need_read_token, limit)
