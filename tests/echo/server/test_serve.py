"""`mpiecho serve` as a process: its options checked before anything is made, what uploads cut short by a SIGKILL of
it left cleaned at its next start, tokens listed and revoked while it serves, and a run of a program given by a
relative path keeping its Valgrind findings once uploaded."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.runformat.runfiles import pack
from echo.server.tokens import create_token
from echo.store.db import open_store
from echo.store.models import Event
from tests.conftest import VENV_BIN, _free_port, echorun, serving

MPIECHO = str(VENV_BIN / "mpiecho")


def mpiecho(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIECHO, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def a_run(programs, tmp_path_factory) -> tuple[Path, str]:
    """A real run directory (2 ranks x 2 copies of coll) and its id."""
    run_dir = tmp_path_factory.mktemp("run") / "run"
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["coll"]], run_dir)
    assert r.returncode == 0, r.stderr
    return run_dir, json.loads((run_dir / "run.json").read_text())["run_id"]


def put(url: str, run_dir: Path, run_id: str, token: str) -> int:
    req = urllib.request.Request(f"{url}/api/runs/{run_id}", data=pack(run_dir), method="PUT",
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        return urllib.request.urlopen(req).status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("port", ["99999", "-1", "busy"])
def test_a_bad_or_busy_port_is_one_line_and_creates_nothing(tmp_path, port):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        given = str(taken.getsockname()[1]) if port == "busy" else port
        r = mpiecho("serve", "--db", f"sqlite:///{tmp_path / 'echo.db'}", "--storage", str(tmp_path / "storage"),
                    f"--port={given}")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"mpiecho: --port {given}" if port != "busy" else
                               f"mpiecho: --host 127.0.0.1 --port {given}: cannot listen there"), r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no storage


def test_leftovers_of_uploads_killed_by_sigkill_are_cleaned_at_start(a_run, tmp_path):
    """The server is killed (SIGKILL) while an upload streams in: its body stays in the storage; so do those an
    older server left (tmp*.tgz) and a folder being unpacked. The next start removes them all, never a stored run."""
    run_dir, run_id = a_run
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    storage = tmp_path / "storage"
    with Session(open_store(db)) as s:
        token = create_token(s, name="tests")
    port = _free_port()
    proc = subprocess.Popen([MPIECHO, "serve", "--db", db, "--port", str(port), "--storage", str(storage)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/openapi.json", timeout=1)
                break
            except OSError:
                assert proc.poll() is None, "mpiecho serve ended"
                time.sleep(0.1)
        assert put(url, run_dir, run_id, token) == 201  # a stored run, which must survive what follows
        body = pack(run_dir)
        with socket.create_connection(("127.0.0.1", port)) as upload:  # half an upload, then the server dies
            upload.sendall(f"PUT /api/runs/{run_id} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                           f"Content-Length: {len(body)}\r\n\r\n".encode() + body[: len(body) // 2])
            for _ in range(600):  # the server has begun writing the body to its storage
                if [p for p in storage.iterdir() if p.suffix == ".tgz" and p.stat().st_size]:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (storage / "tmpold1234.tgz").write_bytes(body[:100])  # what a server of an earlier version left
    (storage / "upload-cut1234").mkdir()
    (storage / "upload-cut1234" / "run.json").write_text("{}")
    left = sorted(p.name for p in storage.iterdir() if p.name not in ("runs", ".serving"))
    assert len(left) == 3 and any(n.endswith(".tgz") and n != "tmpold1234.tgz" for n in left), left
    with serving(db, storage) as url:
        assert sorted(p.name for p in storage.iterdir()) == [".serving", "runs"]
        assert (storage / "runs" / run_id / "run.json").is_file()
        assert json.loads(urllib.request.urlopen(f"{url}/api/runs/{run_id}").read())["id"] == run_id
        assert put(url, run_dir, run_id, token) == 201  # and uploads go on


def test_a_revoked_token_is_refused_at_once_and_its_runs_stay(a_run, tmp_path):
    run_dir, run_id = a_run
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    assert mpiecho("token", "list", "--db", db).stdout.startswith("no runs stored yet")  # reading creates nothing
    assert not (tmp_path / "echo.db").exists()
    nightly = mpiecho("token", "create", "--name", "nightly", "--db", db).stdout.strip()
    laptop = mpiecho("token", "create", "--name", "laptop", "--db", db).stdout.strip()
    listed = mpiecho("token", "list", "--db", db).stdout.splitlines()
    assert listed[0].split() == ["id", "name", "created", "revoked"] and [r.split()[:2] for r in listed[1:]] == [
        ["1", "nightly"], ["2", "laptop"]]
    assert nightly not in "".join(listed)  # only the hashes are kept
    with serving(db, tmp_path / "storage") as url:
        assert put(url, run_dir, run_id, nightly) == 201
        r = mpiecho("token", "revoke", "nightly", "--db", db)
        assert r.returncode == 0 and "revoked token 1 (nightly)" in r.stdout, r.stderr
        assert put(url, run_dir, run_id, nightly) == 401  # the server that runs refuses it at its next request
        assert put(url, run_dir, run_id, laptop) == 201
        assert json.loads(urllib.request.urlopen(f"{url}/api/runs/{run_id}").read())["id"] == run_id
    # the revoked token keeps its row, with when it was revoked: who could upload, and until when
    listed = mpiecho("token", "list", "--db", db).stdout.splitlines()
    assert listed[0].split() == ["id", "name", "created", "revoked"], listed
    assert [r.split()[:2] for r in listed[1:]] == [["1", "nightly"], ["2", "laptop"]], listed
    assert len(listed[1].split()) == 6 and len(listed[2].split()) == 4, listed  # dates: day and time each
    assert listed[1].split()[4] == time.strftime("%Y-%m-%d"), listed
    gone = mpiecho("token", "revoke", "nightly", "--db", db)
    assert gone.returncode == 2 and len(gone.stderr.splitlines()) == 1
    assert "no token is 'nightly'" in gone.stderr
    again = mpiecho("token", "revoke", "1", "--db", db)
    assert again.returncode == 2 and "token 1 (nightly) was revoked already, at " in again.stderr, again.stderr


def test_a_program_given_by_a_relative_path_keeps_its_valgrind_findings_on_the_server(programs, tmp_path):
    """The server runs elsewhere than echorun: `./memerror` means nothing there, so echorun resolves it."""
    db = f"sqlite:///{tmp_path / 'server.db'}"
    with Session(open_store(db)) as s:
        token = create_token(s, name="tests")
    program = Path(programs["memerror"][0])
    local = f"sqlite:///{tmp_path / 'local.db'}"
    with serving(db, tmp_path / "storage") as url:
        r = subprocess.run([str(VENV_BIN / "echorun"), "--run-dir", str(tmp_path / "run"), "--db", local,
                            "--server", url, "--token", token, "-n", "2", "--clones", "2", "--valgrind", "memcheck",
                            f"./{program.name}"], cwd=program.parent, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ))
        assert "uploaded run" in r.stderr, r.stderr
    found = {}
    for name, url_db in (("local", local), ("server", db)):
        with Session(open_store(url_db)) as s:
            found[name] = len(s.scalars(select(Event).where(Event.kind == "memcheck")).all())
    assert found["local"] > 0 and found["server"] == found["local"], found
