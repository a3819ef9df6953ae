"""A full disk under echo's run directory never harms the application: a real tmpfs of 300 KB as the data directory
(records are mapped files: a page of a sparse mapped file that a full tmpfs cannot hold raised SIGBUS in the
application), real mpirun. The program's output and status are its native ones; echo says per process what it
kept and what it lost, and the run is stored with that state."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from echo.runformat.constants import EXIT_COPY_FAILED
from echo.store.db import open_store
from echo.store.models import Event, Metric, Proc, Run
from tests.conftest import VENV_BIN, echorun, lines_by_rank, mpirun_native

STEPS = "20000"  # 20000 records of 48 bytes per process: about 1 MB each, on a 300 KB disk


@contextmanager
def small_disk(path: Path, size: str = "300k") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `path` (root only), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True,
                       text=True)
    if p.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_never_harms_the_application(mpi, programs, tmp_path):
    app = [*programs["ring_steps"], STEPS]
    native = mpirun_native(mpi, 2, app)
    assert native.returncode == 0, native.stderr
    db = f"sqlite:///{tmp_path / 'echo.db'}"  # the store on another disk: it still takes the run
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--db", db, "-n", "2", "--clones", "2", *app], data / "run", env={"XDG_DATA_HOME": str(data)})
        assert "Bus error" not in r.stderr and "signal" not in r.stderr, r.stderr
        assert r.returncode == native.returncode, r.stderr
        assert sorted(r.stdout.splitlines()) == sorted(native.stdout.splitlines()), r.stderr
        for real, (rank, copy) in enumerate([(0, 0), (1, 0), (0, 1), (1, 1)]):  # every process says what it lost
            assert f"echo: application rank {rank} copy {copy} (process {real}): " in r.stderr, r.stderr
        assert "kept as per-function totals only" in r.stderr and "No space left on device" in r.stderr
        assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        procs = s.query(Proc).all()
        stopped = [e for e in s.query(Event).all() if e.kind == "records-stopped"]
    # every call of every process counted, recorded or summarized: the same on every copy, the whole ring's
    assert len({p.calls for p in procs}) == 1 and procs[0].calls >= int(STEPS), [p.calls for p in procs]
    assert all(p.state == "finalized" for p in procs)
    assert sorted((e.app_rank, e.copy) for e in stopped) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_a_store_on_the_full_disk_keeps_the_run_for_later(mpi, programs, tmp_path):
    """The store itself on the full disk: said, with the command that stores the run later, and a status that is
    not a success; once there is room, `mpiecho ingest` stores it as it ended."""
    app = [*programs["ring_steps"], "2000"]
    with small_disk(tmp_path / "data") as data:
        filler = data / "someone-elses-file"
        filler.write_bytes(b"\0" * 250_000)  # the disk nearly full before the job
        r = echorun(["-n", "2", "--clones", "2", *app], data / "run", env={"XDG_DATA_HOME": str(data)})
        assert "Bus error" not in r.stderr, r.stderr
        assert len([line for line in r.stdout.splitlines() if "steps, value" in line]) == 2, r.stderr
        assert r.returncode == 23, r.stderr
        assert "could not store the run in sqlite:///" in r.stderr and "its disk is full" in r.stderr, r.stderr
        assert f"mpiecho ingest {data / 'run'}" in r.stderr, r.stderr
        filler.unlink()
        env = dict(os.environ, XDG_DATA_HOME=str(data))
        p = subprocess.run([str(VENV_BIN / "mpiecho"), "ingest", str(data / "run")], env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0 and "stored run " in p.stdout, p.stderr
        with Session(open_store(f"sqlite:///{data / 'echo' / 'echo.db'}")) as s:
            procs = s.query(Proc).all()
            run = s.query(Run).one()
            assert len(procs) == 4 and len({q.calls for q in procs}) == 1 and procs[0].calls >= 2000
            # how the job ended (run.json rewritten after it, in the room it held), not what it said before it;
            # storing is not part of the run: the job's own status
            assert run.exit_status == 0 and run.duration > 0


def test_a_report_the_disk_refuses_after_the_job_never_loses_the_run(programs, tmp_path):
    """--junit on a disk that filled up during the job (its path was fine before it): said, not a success, and the
    run is stored all the same (before, the run was not stored)."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    with small_disk(tmp_path / "reports", "64k") as reports:
        (reports / "someone-elses-file").write_bytes(b"\0" * 64 * 1024)  # full: only what is already there
        r = echorun(["--db", db, "-n", "2", "--clones", "2", "--sdc", "detect", "--junit", str(reports / "sdc.xml"),
                     *programs["ring_steps"], "100"], tmp_path / "run")
    assert r.returncode == 2, r.stderr
    assert f"could not write the JUnit report {reports / 'sdc.xml'} (No space left on device)" in r.stderr, r.stderr
    assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        assert s.query(Run).one().exit_status == 2


def test_a_full_dev_shm_never_harms_the_application(mpi, programs, tmp_path):
    """The copies' channels are mapped files in /dev/shm (a container's is often small): with less room than a
    rank's channel, its copies go on over MPI instead of dying of SIGBUS when the ring reaches a page /dev/shm
    cannot hold. A /dev/shm of 2 MB of the test's own (a mount namespace: nothing else on the machine sees it);
    Open MPI itself falls back from it."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("a mount namespace of the test's own needs root and unshare")
    app = [*programs["ring_steps"], STEPS]
    native = mpirun_native(mpi, 2, app)
    assert native.returncode == 0, native.stderr
    script = ('mount -t tmpfs -o size=2m tmpfs /dev/shm && exec "$@"')
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(VENV_BIN / "echorun"),
            "--no-store", "--run-dir", str(tmp_path / "run"), "-n", "2", "--clones", "2", *app]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300, start_new_session=True)
    assert "Bus error" not in p.stderr and p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == sorted(native.stdout.splitlines()), p.stderr


def test_a_copy_whose_files_the_full_disk_refuses_never_ends_the_application(mpi, programs, tmp_path):
    """The copies write the program's files into their own view under the run directory: on a full disk their
    writes fail and the program, as real codes do, calls MPI_Abort. That abort is the copy's alone: the copy ends
    with the job, and the application (the representatives, on the program's own disk) runs to its native files and
    output; the run says which copies did not finish (exit 22, never a clean run)."""
    native = tmp_path / "native"
    native.mkdir()
    n = mpirun_native(mpi, 2, [*programs["fileio_app"], str(native), "400"])
    assert n.returncode == 0, n.stderr
    work = tmp_path / "work"
    work.mkdir()
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["fileio_app"], str(work), "400"],
                    data / "run", env={"XDG_DATA_HOME": str(data)})
    assert r.returncode == EXIT_COPY_FAILED, r.stderr
    for rank in (0, 1):
        assert (f"application rank {rank} copy 1 (process {rank + 2}, pid " in r.stderr
                and "called MPI_Abort where its representative went on: it ended with the job" in r.stderr), r.stderr
    assert lines_by_rank(r.stdout) == lines_by_rank(n.stdout)
    assert {p.name: p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()} == \
        {p.name: p.read_bytes() for p in sorted(native.rglob("*")) if p.is_file()}


def test_a_process_killed_after_its_records_stopped_keeps_its_lost_calls(mpi, programs, tmp_path):
    """A process whose records stopped on the full disk and that is then ended by SIGKILL (as an OOM killer ends
    it: no handler, no atexit) still leaves the totals of the calls it made after: they are counted in a lost file
    the library reserved and mapped before the first call (before, they were in memory and died with it)."""
    app = [*programs["ring_oom_killed"], STEPS, "1"]
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--db", db, "-n", "2", *app], data / "run", env={"XDG_DATA_HOME": str(data)})
        assert "Bus error" not in r.stderr and r.returncode != 0, r.stderr
        said = "echo: application rank 1 copy 0 (process 1): records kept for its first "
        assert said in r.stderr and "kept as per-function totals only" in r.stderr, r.stderr
        assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        killed = s.query(Proc).filter_by(app_rank=1).one()
        stopped = [e for e in s.query(Event).all() if e.kind == "records-stopped"]
    # every ring step it made is counted, the ones its records hold and the ones only its totals hold
    assert killed.state != "finalized" and killed.calls >= int(STEPS), (killed.state, killed.calls)
    assert (1, 0) in [(e.app_rank, e.copy) for e in stopped]


def test_a_reinit_restarted_process_on_the_full_disk_says_its_lost_calls(programs, tmp_path):
    """--mode reinit on the full disk (real ULFM): rank 1 is killed and restarted; the restarted process's record
    file (records/restarts/) stops at once on the full disk, and the totals of its calls after are read too: said by
    echorun, an event in the store (before, its lost file was never read)."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--db", db, "-n", "3", "--mode", "reinit", "--inject", "kill:rank=1,after=1s",
                     *programs["reinit_iter"], "3000", "1"], data / "run", env={"XDG_DATA_HOME": str(data)},
                    timeout=240)
        assert "Bus error" not in r.stderr and r.returncode == 0, r.stderr
        assert "echo: Reinit: rank 1 failed; restarted" in r.stderr, r.stderr
        assert "result after 3000 iterations on 3 ranks" in r.stdout
        said = [line for line in r.stderr.splitlines() if "application rank 1, restarted process (pid " in line]
        assert said and "kept as per-function totals only" in said[0], r.stderr
        assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        stopped = [e.message for e in s.query(Event).all() if e.kind == "records-stopped"]
    assert [m for m in stopped if m.startswith("application rank 1, restarted process (pid ")], stopped


def test_copies_output_the_full_disk_cut_is_said(mpi, programs, tmp_path):
    """--clones 2 with the copies' output kept in the run directory (--output rep) on the full disk: the application's
    output and status are native, the run is stored, and each copy says its output file was cut short (before, the
    files simply ended and echorun pointed to them as the copies' output)."""
    app = [*programs["progress_log"], "3000"]
    native = mpirun_native(mpi, 2, app)
    assert native.returncode == 0, native.stderr
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--db", db, "-n", "2", "--clones", "2", *app], data / "run", env={"XDG_DATA_HOME": str(data)})
        assert "Bus error" not in r.stderr and r.returncode == native.returncode, r.stderr
        assert sorted(r.stdout.splitlines()) == sorted(native.stdout.splitlines()), r.stderr
        for rank in (0, 1):
            out = data / "run" / "output" / f"rank{rank}.copy1.out"
            assert f"echo: application rank {rank} copy 1: its output in {out} was cut short: a write to it failed" \
                in r.stderr, r.stderr
        assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        assert s.query(Run).one().exit_status == 0


def test_valgrind_copies_on_the_full_disk_say_what_they_lost(mpi, programs, tmp_path):
    """--clones 2 --valgrind callgrind (copy 1 of each rank under callgrind, its output kept in the run directory)
    on the full disk: the application's output and status are native and the run is stored; each copy under the tool
    says its output file was cut (before, its words went to its own error file, on the full disk), and the profiles
    the disk refused are said and stored as cut (before: silently no costs)."""
    app = [*programs["progress_log"], "3000"]
    native = mpirun_native(mpi, 2, app)
    assert native.returncode == 0, native.stderr
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    with small_disk(tmp_path / "data") as data:
        r = echorun(["--db", db, "-n", "2", "--clones", "2", "--valgrind", "callgrind", *app], data / "run",
                    env={"XDG_DATA_HOME": str(data)}, timeout=240)
        assert "Bus error" not in r.stderr and r.returncode == native.returncode, r.stderr
        assert sorted(r.stdout.splitlines()) == sorted(native.stdout.splitlines()), r.stderr
        for rank in (0, 1):
            out = data / "run" / "output" / f"rank{rank}.copy1.out"
            assert f"echo: application rank {rank} copy 1: its output in {out} was cut short" in r.stderr, r.stderr
            profile = data / "run" / "valgrind" / f"rank{rank}.copy1.callgrind.out"
            assert f"application rank {rank} copy 1: callgrind's report {profile} was cut short" in r.stderr, r.stderr
        assert "stored run " in r.stderr, r.stderr
    with Session(open_store(db)) as s:
        cut = sorted((e.app_rank, e.copy) for e in s.query(Event).all() if e.kind == "valgrind-cut")
        costs = [m.name for m in s.query(Metric).all() if m.name.startswith("callgrind ")]
    assert cut == [(0, 1), (1, 1)] and costs == [], (cut, costs)
