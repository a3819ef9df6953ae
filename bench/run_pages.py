"""Pages at the sizes clusters run: stores of 128 x 2, 1024 x 4 and 4096 x 4 ranks x copies, their record files
written in the preload library's format (bench/synthetic_run.py, with echo/records.py's writer) and stored by the
real ingest; a history of 1,000 runs. For each: ingest time, the run page's bytes and time to serve from a real
`mpiecho serve` (the median of 5), the rank page's, and the time to first paint in headless Chromium.

    .venv/bin/python bench/run_pages.py [--sizes 128x2,1024x4,4096x4] [--history 1000] [--iterations 60]

Writes bench/results/pages.md. Goals (issue 34): the 128-rank run page <= 300 KB and <= 0.3 s, the 4096-rank page
<= 1 MB and <= 1 s.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from chromium import headless
from results_file import measured_by, write  # bench/ itself is on the path of a script run from it
from synthetic_run import Divergence, Plan, make_run, store_runs

from echo.store.db import open_store
from echo.store.ingest import ingest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mpiecho serve` on a free loopback port over the store `db`."""

    def __init__(self, db: str, storage: Path) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([str(BIN / "mpiecho"), "serve", "--db", db, "--port", str(port), "--storage",
                                      str(storage)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            try:
                urllib.request.urlopen(self.url + "/openapi.json", timeout=1)
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("mpiecho serve did not answer")

    def fetch(self, path: str, times: int = 5) -> tuple[int, float]:
        """(bytes, median seconds) of GET path, after one warm-up."""
        urllib.request.urlopen(self.url + path, timeout=300).read()
        took, size = [], 0
        for _ in range(times):
            t = time.perf_counter()
            size = len(urllib.request.urlopen(self.url + path, timeout=300).read())
            took.append(time.perf_counter() - t)
        return size, statistics.median(took)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def first_paint(url: str, screenshot: Path | None = None) -> float | None:
    """Seconds from navigation to the first contentful paint in Debian's headless Chromium (None without it); the
    whole page's screenshot into `screenshot`, if given."""
    driver = headless()
    if driver is None:
        return None
    try:
        paints = []
        for _ in range(3):
            driver.get("about:blank")
            driver.get(url)
            fcp = driver.execute_script("const p = performance.getEntriesByName('first-contentful-paint');"
                                        "return p.length ? p[0].startTime : null;")
            if fcp is not None:
                paints.append(fcp / 1000)
        if screenshot:
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1300, min(height, 6000))
            driver.save_screenshot(str(screenshot))
        return statistics.median(paints) if paints else None
    finally:
        driver.quit()


def size_plan(nranks: int, copies: int, iterations: int) -> Plan:
    """A run with what the summary shows: a copy that diverged 176 times, one killed, one slower."""
    mid = nranks // 2 + 5
    return Plan(nranks, copies, iterations=iterations, run_id=f"halo-{nranks}x{copies}",
                divergences=[Divergence(mid, 1, 40, 176)], died={(3, copies - 1): 100}, slow={(nranks - 7, 1): 3.0})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="128x2,1024x4,4096x4")
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--keep", help="make the stores in this folder and keep them")
    ap.add_argument("--screenshots", help="save a screenshot of each run page and of the history in this folder")
    a = ap.parse_args()
    rows, hist = [], None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for size in a.sizes.split(","):
            nranks, copies = (int(x) for x in size.split("x"))
            plan = size_plan(nranks, copies, a.iterations)
            base = work / plan.run_id
            shutil.rmtree(base, ignore_errors=True)
            t = time.perf_counter()
            run_dir = make_run(base / "run", plan)
            t_make = time.perf_counter() - t
            nrec = nranks * copies * (4 + 6 * a.iterations)
            db = f"sqlite:///{base / 'echo.db'}"
            engine = open_store(db)
            t = time.perf_counter()
            ingest(run_dir, engine)
            t_ingest = time.perf_counter() - t
            engine.dispose()
            server = Server(db, base / "storage")
            try:
                page, t_page = server.fetch(f"/runs/{plan.run_id}")
                rank, t_rank = server.fetch(f"/runs/{plan.run_id}/ranks/{nranks // 2 + 5}")
                shots = Path(a.screenshots) if a.screenshots else None
                paint = first_paint(f"{server.url}/runs/{plan.run_id}",
                                    shots / f"page-run-{nranks}x{copies}.png" if shots else None)
            finally:
                server.stop()
            rows.append((f"{nranks} x {copies}", nrec, t_make, t_ingest, page, t_page, rank, t_rank, paint))
            print(rows[-1], flush=True)
        if a.history:
            base = work / "history"
            shutil.rmtree(base, ignore_errors=True)
            base.mkdir()
            db = f"sqlite:///{base / 'echo.db'}"
            plans = [Plan(4, 2, iterations=2, run_id=f"nightly-{i:04d}", started_at=1_790_000_000.0 + i * 86_400.0,
                          divergences=[Divergence(1, 1, 4)] if i % 97 == 13 else []) for i in range(a.history)]
            t = time.perf_counter()
            store_runs(base, plans, open_store(db))
            t_store = time.perf_counter() - t
            server = Server(db, base / "storage")
            try:
                page, t_page = server.fetch("/programs/halo")
                listing, t_list = server.fetch("/")
                paint = first_paint(f"{server.url}/programs/halo", Path(a.screenshots) / f"page-history-{a.history}.png"
                                    if a.screenshots else None)
            finally:
                server.stop()
            hist = (a.history, t_store, page, t_page, listing, t_list, paint)

    def ms(s: float | None) -> str:
        return "-" if s is None else f"{s * 1000:,.0f} ms"

    lines = ["# Pages at cluster sizes", "",
             measured_by("bench/run_pages.py") + ": stores made of record files in the preload library's format "
             f"(bench/synthetic_run.py: a halo exchange of {a.iterations} iterations, 6 MPI calls each, one copy "
             "diverged 176 times, one killed, one 3x slower) and stored by the real ingest into SQLite; pages served "
             "by a real `mpiecho serve` on loopback (the median of 5 requests after one), first contentful paint in "
             "Debian's headless Chromium (the median of 3). The machine was shared with other jobs: times are "
             "upper bounds.", "",
             "| ranks x copies | records | writing the records | ingest | records/s | run page | served in | "
             "rank page | served in | first paint |", "|---|---|---|---|---|---|---|---|---|---|"]
    for size, nrec, t_make, t_ingest, page, t_page, rank, t_rank, paint in rows:
        lines.append(f"| {size} | {nrec:,} | {t_make:.1f} s | {t_ingest:.1f} s | {nrec / t_ingest:,.0f} | "
                     f"{page / 1000:,.0f} KB | {ms(t_page)} | {rank / 1000:,.0f} KB | {ms(t_rank)} | {ms(paint)} |")
    if hist:
        n, t_store, page, t_page, listing, t_list, paint = hist
        lines += ["", f"History of {n:,} runs of one program (4 ranks x 2 copies each, stored one by one by the real "
                  f"ingest in {t_store:.0f} s): its page {page / 1000:,.0f} KB served in {ms(t_page)}, first paint "
                  f"{ms(paint)}; the list of runs (its first page of 100) {listing / 1000:,.0f} KB in {ms(t_list)}."]
    lines += ["", "Goals (issue 34): the 128-rank run page <= 300 KB and <= 0.3 s; the 4096-rank page <= 1 MB and "
              "<= 1 s; ingest of the 4096 x 4 store >= 25 M records/s.", ""]
    write("pages", lines)


if __name__ == "__main__":
    main()
