"""Runs ingested into a real store (SQLite file, PostgreSQL server), read back."""

import json

import pytest
from sqlalchemy import inspect, select
from sqlalchemy.orm import Session

from echo.store.db import open_store
from echo.store.ingest import ingest
from echo.store.models import CallSummary, Event, Proc, Run
from tests.conftest import echorun


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'echo.db'}"
    return request.getfixturevalue("postgres_db")


def test_migrations_from_empty(store_url):
    engine = open_store(store_url)
    assert {"runs", "procs", "call_summaries", "events", "metrics", "alembic_version"} <= set(
        inspect(engine).get_table_names())
    open_store(store_url)  # a second open finds the schema current


def test_echorun_ingests_the_run(programs, tmp_path, store_url):
    r = echorun(["--db", store_url, "-n", "2", "--clones", "2", *programs["coll"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "stored run" in r.stderr
    engine = open_store(store_url)
    with Session(engine) as s:
        run = s.scalars(select(Run)).one()
        assert (run.nranks, run.nprocs, run.copies, run.status) == (2, 4, [2, 2], "ok")
        procs = s.scalars(select(Proc).order_by(Proc.app_rank, Proc.copy)).all()
        assert [(p.app_rank, p.copy, p.state) for p in procs] == [
            (0, 0, "finalized"), (0, 1, "finalized"), (1, 0, "finalized"), (1, 1, "finalized")]
        assert procs[0].calls == procs[1].calls > 20 and procs[0].bytes == procs[1].bytes > 0
        rows = s.scalars(select(CallSummary).where(CallSummary.app_rank == 0, CallSummary.copy == 1)).all()
        by_fn = {c.function: c for c in rows}
        assert by_fn["MPI_Allreduce"].calls == 3 and by_fn["MPI_Alltoallw"].calls == 1
        assert by_fn["MPI_Bcast"].bytes == 32
        assert sum(c.calls for c in rows) == procs[1].calls


def test_failed_job_is_stored_with_its_events(programs, tmp_path, store_url):
    r = echorun(["--db", store_url, "-n", "2", "--clones", "2", *programs["crash"], "0", "1", "segv"],
                tmp_path / "run")
    assert r.returncode != 0 and "stored run" in r.stderr
    with Session(open_store(store_url)) as s:
        run = s.scalars(select(Run)).one()
        assert run.status == "failed"
        crashed = s.scalars(select(Proc).where(Proc.app_rank == 0, Proc.copy == 1)).one()
        assert crashed.state == "killed by SIGSEGV" and crashed.calls == 5
        events = s.scalars(select(Event).where(Event.kind == "process-ended-abnormally")).all()
        assert any(e.app_rank == 0 and e.copy == 1 and "SIGSEGV" in e.message for e in events)


def test_reingest_replaces(programs, tmp_path):
    url = f"sqlite:///{tmp_path / 'echo.db'}"
    echorun(["--db", url, "-n", "1", "--clones", "2", *programs["p2p"]], tmp_path / "run")
    engine = open_store(url)
    run_id = ingest(tmp_path / "run", engine)
    with Session(engine) as s:
        assert s.scalars(select(Run)).one().id == run_id
        assert len(s.scalars(select(Proc)).all()) == 2


def test_damaged_records_become_events(programs, tmp_path):
    url = f"sqlite:///{tmp_path / 'echo.db'}"
    echorun(["--no-store", "-n", "1", "--clones", "2", *programs["p2p"]], tmp_path / "run")
    rec = tmp_path / "run" / "records" / "1.rec"
    rec.write_bytes(rec.read_bytes()[:-10])
    engine = open_store(url)
    ingest(tmp_path / "run", engine)
    with Session(engine) as s:
        ev = s.scalars(select(Event).where(Event.kind == "records-damaged")).one()
        assert ev.copy == 1 and "truncated" in ev.message
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["exit_status"] == 0


def store_at(store_url: str, revision: str):  # noqa: ANN201 (an Engine and Alembic's Config)
    """A store migrated up to `revision` only, as an older echo left it, and the Alembic configuration that did it."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from echo.store.db import MIGRATIONS

    engine = create_engine(store_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
    return engine, cfg


def test_runs_stored_as_echo_get_the_mode_the_store_can_tell(store_url):
    """Before revision 0003 every run said mode "echo": replicas make it SDR, copies clones; one process per rank
    could be interception only or Reinit, and the store says it does not know."""
    from sqlalchemy import text

    engine, _ = store_at(store_url, "0002")
    run = ("INSERT INTO runs (id, program, argv, mode, nranks, nprocs, copies, started_at, duration, exit_status, "
           "status, diverged, host, mpi_library, run_dir) VALUES (:id, 'app', '[]', 'echo', 2, :n, :copies, 0, 0, 0, "
           "'ok', false, 'h', 'mpi', '/tmp')")
    proc = ("INSERT INTO procs (run_id, real_rank, app_rank, copy, role, host, pid, state, calls, bytes, mpi_time, "
            "wall_time) VALUES (:id, 0, 0, 0, :role, 'h', 1, 'finalized', 0, 0, 0, 0)")
    with engine.begin() as conn:
        for run_id, copies, role in (("sdr", "[2, 2]", "replica"), ("clones", "[3, 1]", "representative"),
                                     ("single", "[1, 1]", "representative")):
            conn.execute(text(run), dict(id=run_id, n=sum(json.loads(copies)), copies=copies))
            conn.execute(text(proc), dict(id=run_id, role=role))
    with Session(open_store(store_url)) as s:
        got = {r.id: (r.mode, r.injections, r.role_values.get("perturbation")) for r in s.scalars(select(Run))}
    assert got == {"sdr": ("sdr", [], None), "clones": ("clones", [], None), "single": ("unknown", [], None)}


def test_a_perturbation_stored_as_a_column_becomes_a_run_value(store_url):
    """Revision 0004 moves the perturbation's label from its column of runs into the roles' run values, and back."""
    from alembic import command
    from sqlalchemy import text

    engine, cfg = store_at(store_url, "0003")
    with engine.begin() as conn:
        for run_id, perturbation in (("noisy", "noise:ulp=1,seed=7 (lockstep)"), ("plain", None)):
            conn.execute(text("INSERT INTO runs (id, program, argv, mode, nranks, nprocs, copies, started_at, "
                              "duration, exit_status, status, diverged, host, mpi_library, run_dir, injections, "
                              "perturbation) VALUES (:id, 'app', '[]', 'clones', 1, 3, '[3]', 0, 0, 0, 'ok', false, "
                              "'h', 'mpi', '/tmp', '[]', :p)"), dict(id=run_id, p=perturbation))
            conn.execute(text("INSERT INTO procs (run_id, real_rank, app_rank, copy, role, host, pid, state, calls, "
                              "bytes, mpi_time, wall_time) VALUES (:id, 0, 0, 0, 'representative', 'h', 1, "
                              "'finalized', 0, 0, 0, 0)"), dict(id=run_id))
    with Session(open_store(store_url)) as s:
        got = {r.id: r.role_values for r in s.scalars(select(Run))}
        procs = {p.run_id for p in s.scalars(select(Proc))}
    assert got == {"noisy": {"perturbation": "noise:ulp=1,seed=7 (lockstep)"}, "plain": {}}
    assert procs == {"noisy", "plain"}  # the runs' rows elsewhere stay (a copied runs table would cascade them away)
    assert "perturbation" not in {c["name"] for c in inspect(engine).get_columns("runs")}
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
        back = dict(conn.execute(text("SELECT id, perturbation FROM runs")).all())
    assert back == {"noisy": "noise:ulp=1,seed=7 (lockstep)", "plain": None}


def test_tokens_of_an_older_store_stay_valid_and_revoked_ones_keep_their_row(store_url):
    """Revision 0005: a token of a store made before it is read as not revoked and still uploads; revoking keeps its
    row with the time; going back to 0004 (an echo that knows no revocation but a missing row) deletes it."""
    from alembic import command
    from sqlalchemy import text

    from echo.server.tokens import digest, is_valid, list_tokens, revoke_token

    engine, cfg = store_at(store_url, "0004")
    with engine.begin() as conn:
        for name in ("nightly", "laptop"):
            conn.execute(text("INSERT INTO tokens (name, digest, created_at) VALUES (:n, :d, 1.0)"),
                         dict(n=name, d=digest(f"echo_{name}")))
    with Session(open_store(store_url)) as s:
        assert [(t.name, t.revoked_at) for t in list_tokens(s)] == [("nightly", None), ("laptop", None)]
        assert is_valid(s, token="echo_nightly")
        revoke_token(s, which="nightly")
        assert not is_valid(s, token="echo_nightly") and is_valid(s, token="echo_laptop")
        assert [(t.name, t.revoked_at is not None) for t in list_tokens(s)] == [("nightly", True), ("laptop", False)]
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0004")
        left = [row[0] for row in conn.execute(text("SELECT name FROM tokens ORDER BY id"))]
    assert left == ["laptop"]
