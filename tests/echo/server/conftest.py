"""A real run, a store and a server app for the API and web tests."""

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from echo.server.app import create_app
from echo.server.tokens import create_token
from echo.store.db import open_store


def make_client(url: str, storage: Path, **kw) -> tuple[TestClient, str]:
    app = create_app(url, storage=str(storage), **kw)
    with Session(open_store(url)) as s:
        token = create_token(s, name="test")
    return TestClient(app), token


@pytest.fixture(params=["sqlite", "postgresql"])
def client(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'server.db'}"
    else:
        url = request.getfixturevalue("postgres_db")
    return make_client(url, tmp_path / "storage")
