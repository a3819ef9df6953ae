"""runs, processes, call summaries, events, metrics

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _run_fk() -> sa.Column:
    return sa.Column("run_id", sa.String(128), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False,
                     index=True)


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("program", sa.String(512), nullable=False, index=True),
        sa.Column("argv", sa.JSON, nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("nranks", sa.Integer, nullable=False),
        sa.Column("nprocs", sa.Integer, nullable=False),
        sa.Column("copies", sa.JSON, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False, index=True),
        sa.Column("duration", sa.Float, nullable=False),
        sa.Column("exit_status", sa.Integer, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("diverged", sa.Boolean, nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("mpi_library", sa.String(512), nullable=False),
        sa.Column("run_dir", sa.Text, nullable=False),
    )
    op.create_table(
        "procs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _run_fk(),
        sa.Column("real_rank", sa.Integer, nullable=False),
        sa.Column("app_rank", sa.Integer, nullable=False),
        sa.Column("copy", sa.Integer, nullable=False),
        sa.Column("role", sa.String(128), nullable=False),
        sa.Column("host", sa.String(256), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("state", sa.String(64), nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("mpi_time", sa.Float, nullable=False),
        sa.Column("wall_time", sa.Float, nullable=False),
    )
    op.create_table(
        "call_summaries",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _run_fk(),
        sa.Column("app_rank", sa.Integer, nullable=False),
        sa.Column("copy", sa.Integer, nullable=False),
        sa.Column("function", sa.String(64), nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("errors", sa.Integer, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("time_total", sa.Float, nullable=False),
        sa.Column("time_max", sa.Float, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _run_fk(),
        sa.Column("kind", sa.String(64), nullable=False, index=True),
        sa.Column("app_rank", sa.Integer, nullable=True),
        sa.Column("copy", sa.Integer, nullable=True),
        sa.Column("call_seq", sa.BigInteger, nullable=True),
        sa.Column("message", sa.Text, nullable=False),
    )
    op.create_table(
        "metrics",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        _run_fk(),
        sa.Column("app_rank", sa.Integer, nullable=False),
        sa.Column("copy", sa.Integer, nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("value", sa.Float, nullable=False),
        sa.Column("unit", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    for table in ("metrics", "events", "call_summaries", "procs", "runs"):
        op.drop_table(table)
