"""Pages at the sizes clusters run: a real run of 128 ranks x 2 copies made here (echorun, oversubscribed: bench/proxy.c
with one bit flipped in one copy's send, --sdc detect), stores of 1024 and 4096 ranks x 4 copies whose record files are
written in the preload library's format (bench/synthetic_run.py, with echo/runformat/records.py's writer), each stored
by the real ingest; a history of 1,000 runs. For each: ingest time, the run page's bytes and time to serve from a
real `mpiecho serve` (the median of 5), the rank page's, and the time to first paint in headless Chromium; with
--baseline, the same pages served by another echo's mpiecho from the same stores (requests alternating: both see the
same load) and the ratio of their times; with --screenshots, the top of each page as a PNG.

    .venv/bin/python bench/run_pages.py [--real 128x2] [--sizes 1024x4,4096x4] [--history 1000] [--iterations 60]
        [--baseline OTHER/.venv/bin/mpiecho] [--screenshots DIR] [--keep DIR]

Writes bench/results/pages.md (its last section, what the numbers are, is written by hand). Goals (issue 34): the
128-rank run page <= 300 KB and <= 0.3 s, the 4096-rank page <= 1 MB and <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
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

from echo.build import detect_mpi, ensure_library
from echo.runformat.records import read_run
from echo.store.db import open_store
from echo.store.ingest import ingest

BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`mpiecho serve` on a free loopback port over the store `db`."""

    def __init__(self, db: str, storage: Path, mpiecho: str = str(BIN / "mpiecho")) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        # started from / : another checkout's mpiecho imports its own echo, not this folder's
        self.proc = subprocess.Popen([mpiecho, "serve", "--db", db, "--port", str(port), "--storage", str(storage)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
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

    def timed(self, path: str) -> tuple[int, float]:
        t = time.perf_counter()
        size = len(urllib.request.urlopen(self.url + path, timeout=300).read())
        return size, time.perf_counter() - t

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def against(db: str, storage: Path, baseline: str, paths: list[str], times: int = 5) -> list[tuple]:
    """Each path served by this checkout's `mpiecho serve` and by `baseline` (another echo's mpiecho) from the same
    store, their requests alternating (after one each), so that both see the same load: (path, bytes here, median
    seconds here, bytes there, median seconds there) per path."""
    here, there = Server(db, storage), Server(db, storage.with_name(storage.name + "-baseline"), baseline)
    try:
        out = []
        for path in paths:
            took: dict[str, list[float]] = {"here": [], "there": []}
            sizes = {}
            for server in (here, there):
                server.timed(path)
            for _ in range(times):
                for key, server in (("here", here), ("there", there)):
                    sizes[key], t = server.timed(path)
                    took[key].append(t)
            out.append((path, sizes["here"], statistics.median(took["here"]), sizes["there"],
                        statistics.median(took["there"])))
        return out
    finally:
        here.stop()
        there.stop()


def first_paint(url: str) -> float | None:
    """Seconds from navigation to the first contentful paint in Debian's headless Chromium (None without it)."""
    driver = headless()
    if driver is None:
        return None
    try:
        paints = []
        for _ in range(3):
            driver.get("about:blank")
            driver.get(url)
            fcp = None
            for _ in range(100):  # the paint may come after the load event Selenium waits for
                fcp = driver.execute_script("const p = performance.getEntriesByName('first-contentful-paint');"
                                            "return p.length ? p[0].startTime : null;")
                if fcp is not None:
                    break
                time.sleep(0.1)
            if fcp is not None:
                paints.append(fcp / 1000)
        return statistics.median(paints) if paints else None
    finally:
        driver.quit()


SHOT_HEIGHT = 2400  # pixels of a page's screenshot at most: its top, what a reader sees first


def screenshots(base: str, pages: dict[str, str], folder: Path | None) -> None:
    """Each page (name: path under `base`) as a PNG of its top in `folder` (nothing without a folder or Chromium),
    its colours reduced to a palette: the docs keep them small."""
    driver = headless() if folder else None
    if driver is None:
        return
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    try:
        for name, path in pages.items():
            driver.set_window_size(1300, 400)  # a short window: the page's height is then its content's
            driver.get(base + path)
            height, chrome = driver.execute_script("return [document.documentElement.scrollHeight, "
                                                   "window.outerHeight - window.innerHeight]")
            driver.set_window_size(1300, min(height, SHOT_HEIGHT) + chrome)
            file = folder / f"{name}.png"
            driver.save_screenshot(str(file))
            Image.open(file).convert("RGB").quantize(colors=64).save(file, optimize=True)
    finally:
        driver.quit()


def diverged_rank(nranks: int) -> int:
    """The rank whose copy diverges (its page is the rank page measured): past the middle, inside a small run."""
    return nranks // 2 + 5 if nranks >= 16 else nranks - 1


def size_plan(nranks: int, copies: int, iterations: int) -> Plan:
    """A run with what the summary shows: a copy that diverged 176 times, one killed, one slower (three other
    ranks, at 4 ranks too)."""
    killed, slow = (3, nranks - 7) if nranks >= 16 else (1, 0)
    return Plan(nranks, copies, iterations=iterations, run_id=f"halo-{nranks}x{copies}",
                divergences=[Divergence(diverged_rank(nranks), 1, 40, 176)], died={(killed, copies - 1): 100},
                slow={(slow, 1): 3.0})


REAL_STEPS = 60  # bench/proxy.c's steps in the real run: 2 Sendrecv each, an Allreduce every 10th


def real_run(work: Path, nranks: int, copies: int) -> tuple[Path, float]:
    """A real run of bench/proxy.c under echorun, `nranks` x `copies` oversubscribed on this machine, one bit of copy
    1 of the diverged rank's 20th call flipped (--sdc detect finds it): its run directory (not stored) and seconds."""
    mpi = detect_mpi()
    ensure_library(mpi)
    exe = work / "proxy"
    subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(HERE / "proxy.c")], check=True)
    run_dir = work / f"real-{nranks}x{copies}"
    shutil.rmtree(run_dir, ignore_errors=True)
    t = time.perf_counter()
    p = subprocess.run([str(BIN / "echorun"), "--no-store", "--max-per-core", "0", "--run-dir", str(run_dir),
                        "-n", str(nranks), "--clones", str(copies), "--sdc", "detect",
                        "--inject", f"bitflip:rank={diverged_rank(nranks)},copy=1,call=20", str(exe),
                        str(REAL_STEPS)], capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - t
    if p.returncode != 20:  # SDC detect's status for a divergence found: anything else is a failed run
        raise RuntimeError(f"echorun exited {p.returncode}, not 20 (the flip detected): {p.stderr[-2000:]}")
    return run_dir, took


def measure(work: Path, run_dir: Path, run_id: str, nranks: int, copies: int, nrec: int, t_make: float,
            shots: Path | None) -> tuple:
    """The run in `run_dir` stored by the real ingest into a store of its own, its pages served and painted: a row
    of the table."""
    base = work / f"store-{run_id}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    db = f"sqlite:///{base / 'echo.db'}"
    engine = open_store(db)
    t = time.perf_counter()
    ingest(run_dir, engine)
    t_ingest = time.perf_counter() - t
    engine.dispose()
    server = Server(db, base / "storage")
    try:
        page, t_page = server.fetch(f"/runs/{run_id}")
        rank, t_rank = server.fetch(f"/runs/{run_id}/ranks/{diverged_rank(nranks)}")
        paint = first_paint(f"{server.url}/runs/{run_id}")
        first = max(diverged_rank(nranks) - 3, 0)
        screenshots(server.url, {f"page-run-{nranks}x{copies}": f"/runs/{run_id}",
                                 f"page-rank-{nranks}x{copies}": f"/runs/{run_id}/ranks/{diverged_rank(nranks)}",
                                 f"page-timeline-{nranks}x{copies}": f"/runs/{run_id}/timeline?first="
                                                                      f"{first}&last={first + 7}"}, shots)
    finally:
        server.stop()
    return (f"{nranks} x {copies}", nrec, t_make, t_ingest, page, t_page, rank, t_rank, paint), db, base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--real", default="128x2", help="ranks x copies of the real run made here ('': none)")
    ap.add_argument("--sizes", default="1024x4,4096x4")
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--keep", help="make the stores in this folder and keep them")
    ap.add_argument("--screenshots", help="save a screenshot of the top of each page (run, rank, timeline of "
                    "each size; history, list of runs) in this folder")
    ap.add_argument("--baseline", help="another echo's mpiecho (a checkout of main, say): each size's run and rank "
                    "pages are also served by it from the same store, requests alternating, and compared")
    a = ap.parse_args()
    rows, hist, compared = [], None, []
    loads = [os.getloadavg()[0]]  # the host's load, sampled at each step: this machine is shared
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        shots = Path(a.screenshots) if a.screenshots else None
        real = []
        if a.real:
            nranks, copies = (int(x) for x in a.real.split("x"))
            run_dir, t_make = real_run(work, nranks, copies)
            nrec = sum(len(f.records) for f in read_run(run_dir))
            run_id = json.loads((run_dir / "run.json").read_text())["run_id"]
            row, db, base = measure(work, run_dir, run_id, nranks, copies, nrec, t_make, shots)
            rows.append(row)
            real.append(row[0])
            if a.baseline:
                compared += [(row[0], *c) for c in against(db, base / "storage", a.baseline, [
                    f"/runs/{run_id}", f"/runs/{run_id}/ranks/{diverged_rank(nranks)}"])]
            loads.append(os.getloadavg()[0])
            print(rows[-1], flush=True)
        for size in filter(None, a.sizes.split(",")):
            nranks, copies = (int(x) for x in size.split("x"))
            plan = size_plan(nranks, copies, a.iterations)
            t = time.perf_counter()
            run_dir = make_run(work / plan.run_id / "run", plan)
            t_make = time.perf_counter() - t
            nrec = nranks * copies * (4 + 6 * a.iterations)
            row, db, base = measure(work, run_dir, plan.run_id, nranks, copies, nrec, t_make, shots)
            rows.append(row)
            if a.baseline:
                compared += [(row[0], *c) for c in against(
                    db, base / "storage", a.baseline, [f"/runs/{plan.run_id}",
                                                       f"/runs/{plan.run_id}/ranks/{diverged_rank(nranks)}"])]
            loads.append(os.getloadavg()[0])
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
                paint = first_paint(f"{server.url}/programs/halo")
                screenshots(server.url, {f"page-history-{a.history}": "/programs/halo", "page-runs": "/"},
                            Path(a.screenshots) if a.screenshots else None)
            finally:
                server.stop()
            hist = (a.history, t_store, page, t_page, listing, t_list, paint)
            loads.append(os.getloadavg()[0])

    def ms(s: float | None) -> str:
        return "-" if s is None else f"{s * 1000:,.0f} ms"

    lines = ["# Pages at cluster sizes", "",
             measured_by("bench/run_pages.py") + ": "
             + (f"a real run made here ({', '.join(real)}: `echorun --sdc detect --inject bitflip:rank=R,copy=1,"
                f"call=20` of bench/proxy.c, {REAL_STEPS} steps, every process of the job on this machine's "
                f"{os.cpu_count()} cores; its 'writing the records' is the whole job) and " if real else "")
             + "stores made of record files in the preload library's format "
             f"(bench/synthetic_run.py: a halo exchange of {a.iterations} iterations, 6 MPI calls each, one copy "
             "diverged 176 times, one killed, one 3x slower), each stored by the real ingest into SQLite; pages served "
             "by a real `mpiecho serve` on loopback (the median of 5 requests after one), first contentful paint in "
             "Debian's headless Chromium (the median of 3); every number below from this one invocation. The "
             f"machine was shared with other jobs (load average {min(loads):.1f} to {max(loads):.1f} on its "
             f"{os.cpu_count()} cores, sampled between the steps): times are upper bounds.", "",
             "| ranks x copies | records | writing the records | ingest | records/s | run page | served in | "
             "rank page | served in | first paint |", "|---|---|---|---|---|---|---|---|---|---|"]
    for size, nrec, t_make, t_ingest, page, t_page, rank, t_rank, paint in rows:
        kind = " (real run)" if size in real else ""
        lines.append(f"| {size}{kind} | {nrec:,} | {t_make:.1f} s | {t_ingest:.1f} s | {nrec / t_ingest:,.0f} | "
                     f"{page / 1000:,.0f} KB | {ms(t_page)} | {rank / 1000:,.0f} KB | {ms(t_rank)} | {ms(paint)} |")
    if hist:
        n, t_store, page, t_page, listing, t_list, paint = hist
        lines += ["", f"History of {n:,} runs of one program (4 ranks x 2 copies each, stored one by one by the real "
                  f"ingest in {t_store:.0f} s): its page {page / 1000:,.0f} KB served in {ms(t_page)}, first paint "
                  f"{ms(paint)}; the list of runs (its first page of 100) {listing / 1000:,.0f} KB in {ms(t_list)}."]
    if compared:
        lines += ["", f"Against `{a.baseline}` serving the same stores, in the same invocation, the two servers' "
                  "requests alternating (the median of 5 each, after one):", "",
                  "| ranks x copies | page | bytes | served in | bytes (baseline) | served in (baseline) | "
                  "time ratio |",
                  "|---|---|---|---|---|---|---|"]
        for size, path, b_here, t_here, b_there, t_there in compared:
            lines.append(f"| {size} | {'rank' if '/ranks/' in path else 'run'} | {b_here / 1000:,.0f} KB | "
                         f"{ms(t_here)} | {b_there / 1000:,.0f} KB | {ms(t_there)} | {t_here / t_there:.2f} |")
    lines += ["", "Goals (issue 34): the 128-rank run page <= 300 KB and <= 0.3 s; the 4096-rank page <= 1 MB and "
              "<= 1 s; ingest of the 4096 x 4 store >= 25 M records/s. Measured against them (a ratio over 1 misses "
              "the goal):", ""]
    for size, nrec, _, t_ingest, page, t_page, *_ in rows:
        nranks = int(size.split(" x ")[0])
        limit = (300_000, 0.3) if nranks <= 128 else (1_000_000, 1.0) if nranks >= 4096 else None
        if limit:
            lines.append(f"- {size}: run page {page / limit[0]:.2f} of its size goal, {t_page / limit[1]:.2f} of its "
                         "time goal" + (f"; ingest {25e6 / (nrec / t_ingest):,.0f}x slower than its goal"
                                        if nranks >= 4096 else ""))
    lines.append("")
    write("pages", lines)


if __name__ == "__main__":
    main()
