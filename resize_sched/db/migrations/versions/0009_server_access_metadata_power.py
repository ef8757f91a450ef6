"""Servers' access addresses, metadata, description and power state (Nova's
``accessIPv4``/``accessIPv6``, ``metadata``, ``description``,
``OS-EXT-STS:power_state``).

Existing rows get none of them: no address, no metadata, and a power state
read from their vm_state until the compute host sets one.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("access_ip_v4", sa.String(39), nullable=True))
        batch.add_column(sa.Column("access_ip_v6", sa.String(39), nullable=True))
        batch.add_column(sa.Column("metadata_items", sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(sa.Column("description", sa.String(255), nullable=True))
        batch.add_column(sa.Column("power_state", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        for column in ("power_state", "description", "metadata_items", "access_ip_v6"):
            batch.drop_column(column)
        batch.drop_column("access_ip_v4")
