"""Record files of real runs, read back in bulk; damaged files."""

import numpy as np
import pytest

from echo.runformat.records import RECORD, RecordsError, read, read_run
from tests.conftest import echorun, lines_by_rank


def test_every_copy_records_what_its_representative_did(programs, tmp_path):
    r = echorun(["--no-store", "-n", "2", "--clones", "3", *programs["nonblocking"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    files = read_run(tmp_path / "run")
    assert [(f.app_rank, f.copy) for f in files] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    reps = {f.app_rank: f for f in files if f.copy == 0}
    for f in files:
        assert f.damage is None and f.ncopies == 3
        assert f.role == ("representative" if f.copy == 0 else "copy")
        assert f.mpi_library.startswith("Open MPI")
        assert f.run_id == files[0].run_id
        rep = reps[f.app_rank]
        assert list(f.function_names()) == list(rep.function_names())
        for field in ("comm", "peer", "tag", "bytes"):
            assert np.array_equal(f.records[field], rep.records[field]), field
        assert np.all(f.records["t_end"] >= f.records["t_start"])
        assert 0 < f.seconds("t_end")[-1] < 60, "times are seconds since the library was loaded"
    names = list(reps[0].function_names())
    assert names[0] == "MPI_Init" and names.count("MPI_Waitany") == 16 and "MPI_Iallreduce" in names
    send = reps[0].records[[i for i, n in enumerate(names) if n == "MPI_Isend"][0]]
    assert send["bytes"] == 4 and send["peer"] == 0 and send["comm"] == 0


def test_a_crash_keeps_records_up_to_it(programs, tmp_path):
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *programs["crash"], "1", "1", "segv"], tmp_path / "run")
    assert r.returncode != 0
    f = read(tmp_path / "run" / "records" / "3.rec")  # rank 1 copy 1
    assert f.damage is None
    names = list(f.function_names())
    assert names == ["MPI_Init", "MPI_Comm_rank"] + ["MPI_Allreduce"] * 3


def test_truncated_file_keeps_whole_records(programs, tmp_path):
    echorun(["--no-store", "-n", "1", *programs["coll"]], tmp_path / "run")
    path = tmp_path / "run" / "records" / "0.rec"
    whole = read(path)
    n = len(whole.records)
    data = path.read_bytes()
    cut = tmp_path / "cut.rec"
    cut.write_bytes(data[: len(data) - RECORD.itemsize // 2])
    f = read(cut)
    assert len(f.records) == n - 1
    assert "truncated" in f.damage and f"kept the {n - 1} whole records" in f.damage
    assert np.array_equal(f.records, whole.records[: n - 1])


def test_corrupt_record_keeps_the_ones_before(programs, tmp_path):
    echorun(["--no-store", "-n", "1", *programs["coll"]], tmp_path / "run")
    path = tmp_path / "run" / "records" / "0.rec"
    data = bytearray(path.read_bytes())
    header = len(data) - len(read(path).records) * RECORD.itemsize
    data[header + 5 * RECORD.itemsize : header + 6 * RECORD.itemsize] = b"\xff" * RECORD.itemsize
    bad = tmp_path / "bad.rec"
    bad.write_bytes(bytes(data))
    f = read(bad)
    assert len(f.records) == 5 and "corrupt record 5" in f.damage


@pytest.mark.parametrize("content", [b"", b"garbage" * 100, b"ECHOREC\0" + b"\x07" * 100])
def test_garbage_is_rejected_clearly(tmp_path, content):
    path = tmp_path / "x.rec"
    path.write_bytes(content)
    with pytest.raises(RecordsError, match=r"x\.rec: (not an echo record file|record layout version)"):
        read(path)


def test_record_files_stop_at_their_bound(programs, tmp_path):
    """A program that makes calls without end must not fill the disk: recording stops at the bound, said in the
    events, and the run goes on."""
    r = echorun(["--no-store", "--records-max-mb", "1", "-n", "1", "--clones", "2", *programs["many_calls"],
                 "200000"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    for real in (0, 1):
        f = read(tmp_path / "run" / "records" / f"{real}.rec")
        assert f.damage is None
        assert 15000 < len(f.records) <= (1 << 20) // RECORD.itemsize
        events = (tmp_path / "run" / "events" / f"{real}.jsonl").read_text()
        assert events.count('"capped"') == 1 and "bound of 1 MiB" in events  # said once, not at every later call


def test_a_copy_killed_with_sigkill_keeps_every_call(programs, tmp_path):
    """SIGKILL runs no handler: the records are in the kernel's page cache the moment they are written, so the
    killed copy's file holds every call it made, and the store counts them."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from sqlalchemy.orm import Session

    from echo.store.db import open_store
    from echo.store.models import Proc
    from tests.echo.test_jobstop import calls_so_far

    run_dir = tmp_path / "run"
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    argv = [str(Path(sys.executable).parent / "echorun"), "--run-dir", str(run_dir), "--db", db, "-n", "2",
            "--clones", "2", *programs["deadlock"]]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rec = run_dir / "records" / "3.rec"  # rank 1 copy 1: in the barrier after its 5 Allreduces and its Send
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and calls_so_far(rec) < 8:
        time.sleep(0.2)
    pid = int((run_dir / "procs" / "3.status").read_text().split()[3])
    os.kill(pid, signal.SIGKILL)
    p.send_signal(signal.SIGTERM)  # the others stay in the deadlock
    p.communicate(timeout=120)
    f = read(rec)
    assert f.damage is None
    assert list(f.function_names())[:8] == (["MPI_Init", "MPI_Comm_rank", "MPI_Comm_size"] + ["MPI_Allreduce"] * 5)
    with Session(open_store(db)) as s:
        procs = {(q.app_rank, q.copy): q for q in s.query(Proc).all()}
    assert procs[(1, 1)].calls == len(f.records) >= 8


def test_the_function_table_is_never_cut(programs, tmp_path):
    """The header holds every function name the MPI has, however many: a record's function is always named."""
    from echo.runformat.records import FIXED

    r = echorun(["--no-store", "-n", "1", *programs["coll"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    path = tmp_path / "run" / "records" / "0.rec"
    nfunctions = FIXED.unpack_from(path.read_bytes())[4]
    f = read(path)
    assert nfunctions > 400 and len(f.functions) == nfunctions and f.damage is None
    assert len(set(f.functions)) == nfunctions and all(n.startswith("MPI_") for n in f.functions)


def test_collectives_record_the_bytes_they_move(programs, tmp_path):
    """An integer sort's exchanges: MPI_Alltoallv (and MPI_Ialltoallv) record every block the rank sends (they
    recorded 0), MPI_Alltoall its whole send buffer (it recorded one peer's block), in place too, MPI_Scatter the
    root's blocks and nothing on the others, MPI_Allgather in place its own block: what the program itself counts,
    on every copy (copies ask the application's communicator, not the real one they stand in on)."""
    r = echorun(["--no-store", "-n", "3", "--clones", "2", *programs["int_sort"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    printed: dict[int, list[tuple[str, int]]] = {}
    for rank, lines in lines_by_rank(r.stdout).items():
        printed[rank] = [(w[2], int(w[3].rstrip(","))) for w in (line.split() for line in lines) if w[1] == "bytes"]
    assert printed[0] and len(printed) == 3
    for f in read_run(tmp_path / "run"):
        names = list(f.function_names())
        recorded = [(n, int(b)) for n, b in zip(names, f.records["bytes"], strict=True)
                    if n in {call for call, _ in printed[f.app_rank]}]
        assert recorded == printed[f.app_rank], (f.app_rank, f.copy)
