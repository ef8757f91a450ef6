"""Migrations: the step that owns one now, and whether its alternates are complete.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("task_owner", sa.String(36), nullable=True))
        batch.add_column(sa.Column("alternates_complete", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("alternates_complete")
        batch.drop_column("task_owner")
