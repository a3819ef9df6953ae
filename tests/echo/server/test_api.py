"""The JSON API with TestClient, on migrated SQLite and on a real PostgreSQL, with real runs uploaded."""

import gzip
import io
import json
import os
import tarfile

from echo.runformat.runfiles import pack
from tests.conftest import need_papi_counting
from tests.echo.server.conftest import make_client


def put(client, run_id, body, token):
    return client.put(f"/api/runs/{run_id}", content=body, headers={"Authorization": f"Bearer {token}"})


def test_upload_list_and_read_a_real_run(client, real_runs):
    c, token = client
    run_dir, run_id = real_runs["voted"]
    r = put(c, run_id, pack(run_dir), token)
    assert r.status_code == 201 and r.json() == {"run_id": run_id, "stored": True}
    assert put(c, run_id, pack(run_dir), token).status_code == 201, "uploads are idempotent"
    runs = c.get("/api/runs").json()
    assert [x["id"] for x in runs] == [run_id] and runs[0]["diverged"] is True and runs[0]["copies"] == [3, 3]
    assert c.get("/api/runs", params={"diverged": "false"}).json() == []
    assert len(c.get("/api/runs", params={"program": "sdc_loop"}).json()) == 1
    # the mode it ran in (not "echo" for every run), the status echorun returned, its injection and whether it fired
    assert (runs[0]["mode"], runs[0]["status"], runs[0]["exit_status"]) == ("clones", "corrected", 21)
    assert [x["id"] for x in c.get("/api/runs", params={"mode": "clones"}).json()] == [run_id]
    assert c.get("/api/runs", params={"mode": "sdr"}).json() == []
    assert [(i["text"], i["fired"]) for i in runs[0]["injections"]] == [("bitflip:rank=1,copy=2,call=20,byte=0,bit=0",
                                                                         True)]
    procs = c.get(f"/api/runs/{run_id}/procs").json()
    assert [(p["app_rank"], p["copy"]) for p in procs] == [(r, k) for r in range(2) for k in range(3)]
    div = c.get(f"/api/runs/{run_id}/divergences").json()
    assert div["diverged"] and div["copies"] == [
        {"app_rank": 1, "copy": 2, "count": 1, "corrected": 1, "first_call": div["copies"][0]["first_call"],
         "first": div["copies"][0]["first"]}]
    # a deliberate injection is expected to diverge: its run is not where a divergence of its series starts
    assert div["copies"][0]["first_call"] >= 20 and div["diverging_since"] is None
    ev = c.get(f"/api/runs/{run_id}/events", params={"kind": "corrected"}).json()
    assert ev and ev[0]["copy"] == 2
    assert c.get("/api/runs/nope").status_code == 404
    assert "/api/runs/{run_id}" in c.get("/openapi.json").json()["paths"]


def test_counters_and_history(client, real_runs):
    c, token = client
    for name in ("clean", "voted"):
        run_dir, run_id = real_runs[name]
        assert put(c, run_id, pack(run_dir), token).status_code == 201
    hist = c.get("/api/programs/sdc_loop/history").json()
    assert [h["id"] for h in hist] == [real_runs["clean"][1], real_runs["voted"][1]]
    assert c.get(f"/api/runs/{real_runs['voted'][1]}/divergences").json()["diverging_since"] is None, \
        "the voted run is another configuration, with a bit flipped on purpose: it starts no divergence"
    need_papi_counting()
    clean_id = real_runs["clean"][1]
    counters = c.get(f"/api/runs/{clean_id}/counters").json()
    assert set(counters) == {"0", "1"} and "perf::CONTEXT-SWITCHES" in counters["0"]["events"]
    assert c.get(f"/api/runs/{clean_id}/metrics", params={"prefix": "papi read"}).json()


def test_bad_uploads_are_rejected_whole(client, real_runs, tmp_path):
    c, token = client
    run_dir, run_id = real_runs["clean"]
    good = pack(run_dir)
    assert put(c, run_id, good, "wrong").status_code == 401
    r = put(c, run_id, good[: len(good) // 2], token)
    assert r.status_code == 400 and "truncated or corrupt" in r.json()["detail"]
    assert put(c, run_id, b"not gzip at all", token).status_code == 400
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = json.dumps({"hello": 1}).encode()
        info = tarfile.TarInfo("run.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    r = put(c, run_id, buf.getvalue(), token)
    assert r.status_code == 422 and "wrong schema" in r.json()["detail"]
    r = put(c, "another-id", good, token)
    assert r.status_code == 422 and "the upload was for 'another-id'" in r.json()["detail"]
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    assert put(c, run_id, evil.getvalue(), token).status_code == 400
    assert c.get("/api/runs").json() == [], "nothing was stored"
    assert not (tmp_path / "escape").exists()


def test_huge_upload_is_refused(tmp_path, real_runs):
    c, token = make_client(f"sqlite:///{tmp_path / 's.db'}", tmp_path / "st", max_upload=1000)
    run_dir, run_id = real_runs["clean"]
    r = put(c, run_id, gzip.compress(os.urandom(5000)), token)
    assert r.status_code == 413 and "at most 1000" in r.json()["detail"]
    assert c.get("/api/runs").json() == []


def test_reads_can_require_a_token(tmp_path):
    c, token = make_client(f"sqlite:///{tmp_path / 's.db'}", tmp_path / "st", read_token=True)
    assert c.get("/api/runs").status_code == 401
    assert c.get("/api/runs", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_the_documents_the_pages_name_are_served(tmp_path):
    """The pages say docs/perf.md and link /docs/perf.md: the installed document, readable without a token even
    where reads need one (it is not a run); a wrong name is a page naming the documents, and /docs stays the API's."""
    from pathlib import Path

    c, _ = make_client(f"sqlite:///{tmp_path / 's.db'}", tmp_path / "st", read_token=True)
    r = c.get("/docs/perf.md")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert r.text == (Path(__file__).resolve().parents[3] / "docs" / "perf.md").read_text()
    bad = c.get("/docs/prf.md")
    assert bad.status_code == 404 and bad.headers["content-type"].startswith("text/html")
    assert "no document &#39;prf.md&#39;" in bad.text and "perf, perturb" in bad.text
    assert "swagger-ui" in c.get("/docs").text
