"""Servers' launch time (``OS-SRV-USG:launched_at``, os-simple-tenant-usage).

Servers that already ran (placed on a host and past ``building``) get their
creation time: the best figure left for them, a few seconds early.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def UTCDateTime() -> sa.types.TypeEngine:  # noqa: N802 (reads as the model's type)
    # NOTE: frozen copy of models.UTCDateTime's DDL, as in 0001.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("launched_at", UTCDateTime(), nullable=True))
    servers = sa.table(
        "servers",
        sa.column("launched_at", UTCDateTime()),
        sa.column("created_at", UTCDateTime()),
        sa.column("host", sa.String(255)),
        sa.column("vm_state", sa.String(32)),
    )
    op.execute(
        servers.update()
        .where(servers.c.host.is_not(None), servers.c.vm_state != "building")
        .values(launched_at=servers.c.created_at)
    )


def downgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("launched_at")
