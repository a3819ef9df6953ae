"""a revoked upload token keeps its row, with the time it was revoked (before, its row was deleted: no record)

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tokens", sa.Column("revoked_at", sa.Float, nullable=True))


def downgrade() -> None:
    # an older echo knows no revocation but a missing row: a revoked token must not upload again there
    tokens = sa.table("tokens", sa.column("revoked_at", sa.Float))
    op.get_bind().execute(sa.delete(tokens).where(tokens.c.revoked_at.isnot(None)))
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("revoked_at")
