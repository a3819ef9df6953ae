"""the mode a run ran in, its injections and its perturbation

Revision ID: 0003
Revises: 0002

Runs stored before this revision all say mode "echo", whatever they ran in. What the store itself can tell is
restored: replicas make an SDR run, several copies of a rank a run with clones; a run with one process per rank
was either interception only or Reinit, which the store cannot tell apart: it says "unknown".
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("injections", sa.JSON, nullable=False, server_default="[]"))
        batch.add_column(sa.Column("perturbation", sa.String(256), nullable=True))
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("mode", sa.String), sa.column("copies", sa.JSON))
    procs = sa.table("procs", sa.column("run_id", sa.String), sa.column("role", sa.String))
    sdr = set(conn.execute(sa.select(procs.c.run_id).where(procs.c.role == "replica").distinct()).scalars())
    for run_id, copies in conn.execute(sa.select(runs.c.id, runs.c.copies).where(runs.c.mode == "echo")).all():
        mode = "sdr" if run_id in sdr else "clones" if max(copies or [1]) > 1 else "unknown"
        conn.execute(runs.update().where(runs.c.id == run_id).values(mode=mode))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("perturbation")
        batch.drop_column("injections")
