"""Which provider holds which request group; what a host's own children report.

``servers.group_providers`` is Placement's ``mappings`` for the server's
last claim: request group suffix -> provider uuids (``""`` for the
unnumbered group), so a resize and a revert keep each numbered group (a
vGPU, a NUMA cell) on the provider it is on. None when the flavor has no
numbered group. ``migrations.old_group_providers`` is the map when the
resize began, which a failure or a revert gives back.

``compute_nodes.children`` is what the host's compute service reported of
the child providers it owns (uuid -> name, inventory, traits); None on a
flat host. The root's own inventory stays in ``inventory``, which the
scheduler judges the source from.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("group_providers", sa.JSON(none_as_null=True), nullable=True))
    with op.batch_alter_table("migrations") as batch:
        batch.add_column(
            sa.Column("old_group_providers", sa.JSON(none_as_null=True), nullable=True)
        )
    with op.batch_alter_table("compute_nodes") as batch:
        batch.add_column(sa.Column("children", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("compute_nodes") as batch:
        batch.drop_column("children")
    with op.batch_alter_table("migrations") as batch:
        batch.drop_column("old_group_providers")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("group_providers")
