"""the roles' values of a run in a table of their own (run_values), instead of a column per role

Revision ID: 0004
Revises: 0003

The perturbation's label, a column of runs until now, becomes the run value "perturbation"; a new role keeps its
values of a run there with no revision of its own.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("run_values",
                    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                    sa.Column("run_id", sa.String(128), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("name", sa.String(64), nullable=False),
                    sa.Column("value", sa.Text, nullable=False))
    op.create_index("ix_run_values_run_id", "run_values", ["run_id"])
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("perturbation", sa.String))
    values = sa.table("run_values", sa.column("run_id", sa.String), sa.column("name", sa.String),
                      sa.column("value", sa.Text))
    kept = conn.execute(sa.select(runs.c.id, runs.c.perturbation).where(runs.c.perturbation.isnot(None))).all()
    if kept:
        conn.execute(values.insert(), [{"run_id": i, "name": "perturbation", "value": v} for i, v in kept])
    # not a batch: SQLite would copy runs into a new table and drop the old one, whose rows' deletion cascades to
    # every process, event and metric of the store; its own ALTER TABLE DROP COLUMN (3.35) keeps them
    op.drop_column("runs", "perturbation")


def downgrade() -> None:
    op.add_column("runs", sa.Column("perturbation", sa.String(256), nullable=True))
    conn = op.get_bind()
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("perturbation", sa.String))
    values = sa.table("run_values", sa.column("run_id", sa.String), sa.column("name", sa.String),
                      sa.column("value", sa.Text))
    for run_id, value in conn.execute(sa.select(values.c.run_id, values.c.value)
                                      .where(values.c.name == "perturbation")).all():
        conn.execute(runs.update().where(runs.c.id == run_id).values(perturbation=value))
    op.drop_index("ix_run_values_run_id", "run_values")
    op.drop_table("run_values")
