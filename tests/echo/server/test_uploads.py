"""Uploads end to end with the real server (`mpiecho serve`, uvicorn) and real jobs: the server and token checked
before a job starts, a failed upload an error with the run kept here, `mpiecho upload` sending it again, and the
tarball the server's own advice makes accepted."""

import json
import subprocess
import urllib.error
import urllib.request

import pytest
from sqlalchemy.orm import Session

from echo.server.tokens import create_token
from echo.store.db import open_store
from tests.conftest import VENV_BIN, _free_port, echorun, serving


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server, and one of the same store that takes uploads of at most 1000 bytes (every upload fails)."""
    base = tmp_path_factory.mktemp("server")
    db = f"sqlite:///{base / 'server.db'}"
    with Session(open_store(db)) as s:
        token = create_token(s, name="uploads")
    with serving(db, base / "storage") as url, \
            serving(db, base / "storage", env={"ECHO_SERVER_MAX_UPLOAD": "1000"}) as small:
        yield url, small, token


def stored(url: str, run_id: str) -> bool:
    try:
        return json.loads(urllib.request.urlopen(f"{url}/api/runs/{run_id}").read())["id"] == run_id
    except urllib.error.HTTPError as e:
        assert e.code == 404
        return False


def test_the_servers_advice_is_accepted(server, real_runs):
    url, _, token = server
    run_dir, run_id = real_runs["clean"]
    body = subprocess.run(["tar", "czf", "-", "-C", str(run_dir), "."], capture_output=True, check=True).stdout
    req = urllib.request.Request(f"{url}/api/runs/{run_id}", data=body, method="PUT",
                                 headers={"Authorization": f"Bearer {token}"})
    assert urllib.request.urlopen(req).status == 201
    assert stored(url, run_id)


def test_server_and_token_are_checked_before_the_job(server, programs, tmp_path):
    url, _, token = server
    down = f"http://127.0.0.1:{_free_port()}"
    for args, said in ((["--server", url, "--token", "wrong"], f"the echo server at {url} refuses this token"),
                       (["--server", down, "--token", token], f"cannot reach the echo server at {down}"),
                       (["--server", url], f"--server {url} needs an upload token: --token T or ECHO_TOKEN")):
        r = echorun([*args, "-n", "2", *programs["coll"]], tmp_path / "run", env={"ECHO_TOKEN": ""})
        assert r.returncode == 2 and r.stderr.startswith(f"echorun: {said}"), r.stderr
        assert len(r.stderr.splitlines()) == 1 and not (tmp_path / "run").exists()  # nothing ran


def test_a_failed_upload_fails_and_is_sent_again(server, programs, tmp_path):
    url, small, token = server
    db = f"sqlite:///{tmp_path / 'local.db'}"
    r = echorun(["--db", db, "--server", small, "--token", token, "-n", "2", "--clones", "2", *programs["coll"]],
                tmp_path / "run")
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    assert "application exited with status 0" in r.stderr and "the server refused the upload (413)" in r.stderr
    assert r.returncode == 24, r.stderr
    assert f"run {run_id} was not uploaded; it is kept in {tmp_path / 'run'}: `mpiecho upload {run_id}" in r.stderr
    assert not stored(url, run_id)
    mpiecho = str(VENV_BIN / "mpiecho")
    again = subprocess.run([mpiecho, "upload", run_id[:20], "--db", db, "--server", url, "--token", token],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"uploaded run {run_id} to {url}" in again.stderr, again.stderr
    procs = json.loads(urllib.request.urlopen(f"{url}/api/runs/{run_id}/procs").read())
    assert len(procs) == 4 and all(p["state"] == "finalized" for p in procs)
    by_dir = subprocess.run([mpiecho, "upload", str(tmp_path / "run"), "--server", small, "--token", token],
                            capture_output=True, text=True, timeout=120)
    assert by_dir.returncode == 24 and "refused the upload (413)" in by_dir.stderr
    unknown = subprocess.run([mpiecho, "upload", "no-such-run", "--db", db, "--server", url, "--token", token],
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and unknown.stderr.startswith("mpiecho: no run 'no-such-run'")
