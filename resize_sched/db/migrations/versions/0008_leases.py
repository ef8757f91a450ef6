"""The conductors' lease: one sweep and one reaper per deployment at a time.

``leases`` has one row per duty (``sweep`` today): who holds it and until
when, and how far the duty got (the reaper's last pass, ``reaped_until``,
and its last scan of every provider, ``scanned_at``). The row is created by
the first conductor that takes the lease.

``migrations.updated_at`` gets an index: the reaper reads the migrations
closed since its last pass.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def UTCDateTime() -> sa.types.TypeEngine:  # noqa: N802 (reads as the model's type)
    # NOTE: frozen copy of models.UTCDateTime's DDL, as in 0001.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(255), nullable=True),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("reaped_until", UTCDateTime(), nullable=True),
        sa.Column("scanned_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_leases"),
    )
    op.create_index("ix_migrations_updated_at", "migrations", ["updated_at"])


def downgrade() -> None:
    op.drop_index("ix_migrations_updated_at", table_name="migrations")
    op.drop_table("leases")
