"""Server benchmark, on loopback: upload and ingest of a 10-million-record run,
server time to render that run's page (target under 1 s), and 50 concurrent
uploads without loss.

    .venv/bin/python bench/run_server.py [--records N]

Writes bench/results/server.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from results_file import measured_by, write  # bench/ itself is on the path of a script run from it
from sqlalchemy.orm import Session

from echo.build import detect_mpi, ensure_library
from echo.runformat.runfiles import pack
from echo.server.tokens import create_token
from echo.store.db import open_store

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def put(url: str, run_id: str, body: bytes, token: str) -> int:
    req = urllib.request.Request(f"{url}/api/runs/{run_id}", data=body, method="PUT",
                                 headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=1800) as r:
        return r.status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
    a = ap.parse_args()
    mpi = detect_mpi()
    ensure_library(mpi)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "manycalls"
        subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(HERE / "manycalls.c")], check=True)
        big = work / "big"
        subprocess.run([str(BIN / "echorun"), "--no-store", "--run-dir", str(big), "-n", "2", str(exe),
                        str(a.records // 2)], check=True, capture_output=True)
        small = work / "small"
        subprocess.run([str(BIN / "echorun"), "--no-store", "--run-dir", str(small), "-n", "2", "--clones", "2",
                        str(exe), "1000"], check=True, capture_output=True)
        db = f"sqlite:///{work / 'server.db'}"
        with Session(open_store(db)) as s:
            token = create_token(s, name="bench")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = subprocess.Popen([str(BIN / "mpiecho"), "serve", "--db", db, "--port", str(port), "--storage",
                                   str(work / "storage")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    urllib.request.urlopen(url + "/api/runs", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            big_id = json.loads((big / "run.json").read_text())["run_id"]
            t = time.perf_counter()
            body = pack(big)
            t_pack = time.perf_counter() - t
            t = time.perf_counter()
            put(url, big_id, body, token)
            t_upload = time.perf_counter() - t
            renders = []
            for _ in range(5):
                t = time.perf_counter()
                urllib.request.urlopen(f"{url}/runs/{big_id}", timeout=60).read()
                renders.append(time.perf_counter() - t)
            # 50 concurrent uploads of distinct runs
            bodies = {}
            meta = json.loads((small / "run.json").read_text())
            for i in range(50):
                d = work / f"u{i}"
                shutil.copytree(small, d)
                run_id = f"{meta['run_id']}-{i:02d}"
                (d / "run.json").write_text(json.dumps(dict(meta, run_id=run_id)))
                bodies[run_id] = pack(d)
            t = time.perf_counter()
            with ThreadPoolExecutor(max_workers=50) as pool:
                statuses = list(pool.map(lambda kv: put(url, kv[0], kv[1], token), bodies.items()))
            t_conc = time.perf_counter() - t
            stored = json.loads(urllib.request.urlopen(f"{url}/api/runs?limit=1000").read())
            found = sum(1 for r in stored if r["id"] in bodies)
        finally:
            server.terminate()
            server.wait(timeout=30)
    n = a.records
    write("server", [
        "# Server",
        "",
        measured_by("bench/run_server.py") + ": `mpiecho serve` on loopback (one uvicorn worker, SQLite).",
        "",
        "| step | result |",
        "|---|---|",
        f"| pack a {n:,}-record run (gzip'd tar, client side) | {t_pack:.1f} s, {len(body) / 2**20:.0f} MiB |",
        f"| upload and ingest it (server: extract, summarize, store) | {t_upload:.1f} s, "
        f"{n / t_upload:,.0f} records/s |",
        f"| render that run's page (best / worst of 5, request time on loopback) | {min(renders) * 1000:.0f} ms / "
        f"{max(renders) * 1000:.0f} ms (target under 1 s) |",
        f"| 50 concurrent uploads of distinct runs | {t_conc:.1f} s, {statuses.count(201)} answered 201, "
        f"{found} of 50 stored |",
        "",
    ])


if __name__ == "__main__":
    main()
