"""Servers and migrations: what a server holds in Placement, provider by provider.

A host may be a tree of providers (a vGPU or PCI child, NUMA children) or take
its disk from a sharing provider, so a server's flavor is not always held on
its host's root provider alone. ``servers.allocations`` is what our last
write gave the server (None: its whole flavor on ``rp_uuid``, as every
server of a flat host); ``migrations.old_allocations`` is what the server held
when its resize began (None: the old flavor on ``source_rp_uuid``), which a
failure or a revert gives back.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("allocations", sa.JSON(none_as_null=True), nullable=True))
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(sa.Column("old_allocations", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("old_allocations")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("allocations")
