"""The server journal: a build's claim, its give-back, a delete's release and a
reap, journaled before each Placement write as a resize's transitions are.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def UTCDateTime() -> sa.types.TypeEngine:  # noqa: N802 (reads as the model's type)
    # NOTE: frozen copy of models.UTCDateTime's DDL, as in 0001.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "server_journal",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(64), nullable=False),
        sa.Column("before", sa.JSON(), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["server_uuid"], ["servers.uuid"], name="fk_server_journal_server_uuid_servers"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_server_journal"),
        sa.UniqueConstraint("server_uuid", "seq", name="uq_server_journal_server_uuid_seq"),
    )
    op.create_index("ix_server_journal_state", "server_journal", ["state"])


def downgrade() -> None:
    op.drop_table("server_journal")
