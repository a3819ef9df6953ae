"""A real PostgreSQL server for the store tests, started for the session."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_url():
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; scripts/setup.sh does it as root)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'psycopg[binary]')")
    bindir = bins[-1]
    data = tempfile.mkdtemp(prefix="echo-pg-")
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust"], check=True,
                   capture_output=True)
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-w", "-l", f"{data}/log", "-o",
                              f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start"], check=True,
                   capture_output=True)
    try:
        for _ in range(50):
            r = subprocess.run(as_user + [f"{bindir}/pg_isready", "-h", data, "-p", str(port)], capture_output=True)
            if r.returncode == 0:
                break
            time.sleep(0.2)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "stop"], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres_url):
    """A new, empty database on the session's server, for one test."""
    from sqlalchemy import create_engine, text

    name = f"echo_{uuid.uuid4().hex[:12]}"
    admin = create_engine(f"{postgres_url}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{postgres_url}/{name}"
