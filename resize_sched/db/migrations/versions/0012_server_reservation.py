"""A server's reservation id and launch index (multiple create).

Every server of one ``POST /servers`` shares a reservation id (``r-`` and
eight random characters, as Nova's) and has its place in the request as
its launch index; ``GET /servers?reservation_id=`` lists them. Existing
rows were each created alone and get none (the API shows ``""`` and 0).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("reservation_id", sa.String(255), nullable=True))
        batch.add_column(sa.Column("launch_index", sa.Integer, nullable=True))
        batch.create_index("ix_servers_reservation_id", ["reservation_id"])


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_index("ix_servers_reservation_id")
        batch.drop_column("launch_index")
        batch.drop_column("reservation_id")
