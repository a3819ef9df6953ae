"""Tables of the store. Every change here needs an Alembic revision in migrations/versions."""

from __future__ import annotations

from sqlalchemy import JSON, BigInteger, Boolean, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"
    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    program: Mapped[str] = mapped_column(String(512), index=True)
    argv: Mapped[list] = mapped_column(JSON)
    mode: Mapped[str] = mapped_column(String(32))  # "clones", "sdr" or "reinit" (echorun --mode)
    nranks: Mapped[int] = mapped_column(Integer)
    nprocs: Mapped[int] = mapped_column(Integer)
    copies: Mapped[list] = mapped_column(JSON)  # copies per application rank
    started_at: Mapped[float] = mapped_column(Float, index=True)  # Unix time
    duration: Mapped[float] = mapped_column(Float)
    exit_status: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))  # "ok", "failed", "interrupted by SIGINT"... (ingest.run_status)
    diverged: Mapped[bool] = mapped_column(Boolean, default=False)
    host: Mapped[str] = mapped_column(String(256))
    mpi_library: Mapped[str] = mapped_column(String(512))
    run_dir: Mapped[str] = mapped_column(Text)
    # planned injections, each {kind, rank, copy, when, text, call, fired, note} (echo/injections.py)
    injections: Mapped[list] = mapped_column(JSON, default=list)
    # the roles' values of the run (RunValue), read with it
    value_rows: Mapped[list[RunValue]] = relationship(lazy="selectin", order_by="RunValue.id", passive_deletes=True)

    @property
    def role_values(self) -> dict[str, str]:
        """The roles' values of the run by name ({"perturbation": "noise:ulp=1,seed=7 (lockstep)"})."""
        return {v.name: v.value for v in self.value_rows}


class RunValue(Base):
    """A value a role keeps of a whole run (its Role's run_values), by name: a role needs no column of its own."""

    __tablename__ = "run_values"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    value: Mapped[str] = mapped_column(Text)


class Proc(Base):
    """One process of a run: a copy of an application rank."""

    __tablename__ = "procs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    real_rank: Mapped[int] = mapped_column(Integer)
    app_rank: Mapped[int] = mapped_column(Integer)
    copy: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(128))
    host: Mapped[str] = mapped_column(String(256))
    pid: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(64))  # finalized / signal N / no MPI_Finalize / no records
    calls: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    mpi_time: Mapped[float] = mapped_column(Float)  # seconds inside MPI calls
    wall_time: Mapped[float] = mapped_column(Float)  # first record to last record


class CallSummary(Base):
    """Calls of one function by one copy of one rank."""

    __tablename__ = "call_summaries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    app_rank: Mapped[int] = mapped_column(Integer)
    copy: Mapped[int] = mapped_column(Integer)
    function: Mapped[str] = mapped_column(String(64))
    calls: Mapped[int] = mapped_column(Integer)
    errors: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    time_total: Mapped[float] = mapped_column(Float)
    time_max: Mapped[float] = mapped_column(Float)


class Event(Base):
    """Something that happened in a run: a death, damaged records, (later) a divergence."""

    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(64), index=True)
    app_rank: Mapped[int | None] = mapped_column(Integer, nullable=True)
    copy: Mapped[int | None] = mapped_column(Integer, nullable=True)
    call_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    message: Mapped[str] = mapped_column(Text)


class Metric(Base):
    """A named number about one copy of one rank (role results land here)."""

    __tablename__ = "metrics"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    app_rank: Mapped[int] = mapped_column(Integer)
    copy: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128))
    value: Mapped[float] = mapped_column(Float)
    unit: Mapped[str] = mapped_column(String(32), default="")


class Token(Base):
    """A token that may upload runs to the server (only its SHA-256 is kept); a revoked one keeps its row, with the
    time it was revoked, and uploads nothing more."""

    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(128))
    digest: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True, default=None)
