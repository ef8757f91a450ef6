"""A cold migration's requested host (``migrate`` with ``host``, 2.56).

The scheduling step reads it, and so does a step that recovery runs again
after a conductor stopped part-way: it is recorded on the migration.
Existing rows are resizes and get none.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("requested_host", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("requested_host")
