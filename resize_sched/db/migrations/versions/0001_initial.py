"""Initial schema: flavors, servers, request specs, migrations, journal.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp() -> sa.types.TypeEngine:
    # NOTE: frozen copy of models.UTCDateTime's DDL: timestamptz on
    # PostgreSQL, DATETIME with microseconds on MySQL, DATETIME on SQLite.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Column("updated_at", _timestamp(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "flavors",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("flavorid", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("vcpus", sa.Integer(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("root_gb", sa.Integer(), nullable=False),
        sa.Column("ephemeral_gb", sa.Integer(), nullable=False),
        sa.Column("swap", sa.Integer(), nullable=False),
        sa.Column("extra_specs", sa.JSON(), nullable=False),
        sa.Column("is_public", sa.Boolean(), nullable=False),
        sa.Column("deleted", sa.Integer(), nullable=False),
        sa.Column("deleted_at", _timestamp(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("id", name="pk_flavors"),
        sa.UniqueConstraint("flavorid", "deleted", name="uq_flavors_flavorid_deleted"),
        sa.UniqueConstraint("name", "deleted", name="uq_flavors_name_deleted"),
    )

    op.create_table(
        "servers",
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("flavor", sa.JSON(), nullable=False),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("node", sa.String(255), nullable=True),
        sa.Column("rp_uuid", sa.String(36), nullable=True),
        sa.Column("vm_state", sa.String(32), nullable=False),
        sa.Column("task_state", sa.String(64), nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("fault_message", sa.Text(), nullable=True),
        sa.Column("fault_code", sa.Integer(), nullable=True),
        sa.Column("fault_at", _timestamp(), nullable=True),
        sa.Column("needs_heal", sa.Boolean(), nullable=False),
        sa.Column("placement_generation", sa.Integer(), nullable=True),
        sa.Column("deleted_at", _timestamp(), nullable=True),
        *_timestamps(),
        sa.PrimaryKeyConstraint("uuid", name="pk_servers"),
    )
    op.create_index("ix_servers_project_id", "servers", ["project_id"])
    op.create_index("ix_servers_host", "servers", ["host"])
    op.create_index("ix_servers_deleted_at", "servers", ["deleted_at"])

    op.create_table(
        "request_specs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("resources", sa.JSON(), nullable=False),
        sa.Column("required_traits", sa.JSON(), nullable=False),
        sa.Column("ignore_hosts", sa.JSON(), nullable=False),
        sa.Column("force_hosts", sa.JSON(), nullable=False),
        sa.Column("scheduler_hints", sa.JSON(), nullable=False),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["server_uuid"], ["servers.uuid"], name="fk_request_specs_server_uuid_servers"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_request_specs"),
        sa.UniqueConstraint("server_uuid", name="uq_request_specs_server_uuid"),
    )

    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("migration_type", sa.String(16), nullable=False),
        sa.Column("source_host", sa.String(255), nullable=False),
        sa.Column("source_node", sa.String(255), nullable=True),
        sa.Column("source_rp_uuid", sa.String(36), nullable=False),
        sa.Column("dest_host", sa.String(255), nullable=True),
        sa.Column("dest_node", sa.String(255), nullable=True),
        sa.Column("dest_rp_uuid", sa.String(36), nullable=True),
        sa.Column("old_flavor", sa.JSON(), nullable=False),
        sa.Column("new_flavor", sa.JSON(), nullable=False),
        sa.Column("old_resources", sa.JSON(), nullable=False),
        sa.Column("new_resources", sa.JSON(), nullable=False),
        sa.Column("claim_strategy", sa.String(255), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("error_kind", sa.String(16), nullable=True),
        sa.Column("error_reason", sa.Text(), nullable=True),
        sa.Column("alternates", sa.JSON(), nullable=False),
        sa.Column("tried", sa.JSON(), nullable=False),
        sa.Column("holdings", sa.JSON(), nullable=True),
        sa.Column("missing", sa.JSON(), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["server_uuid"], ["servers.uuid"], name="fk_migrations_server_uuid_servers"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_migrations"),
        sa.UniqueConstraint("uuid", name="uq_migrations_uuid"),
    )
    op.create_index("ix_migrations_server_uuid_status", "migrations", ["server_uuid", "status"])
    op.create_index("ix_migrations_status", "migrations", ["status"])

    op.create_table(
        "migration_journal",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("migration_uuid", sa.String(36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("phase", sa.String(64), nullable=False),
        sa.Column("before", sa.JSON(), nullable=False),
        sa.Column("target", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        *_timestamps(),
        sa.ForeignKeyConstraint(
            ["migration_uuid"],
            ["migrations.uuid"],
            name="fk_migration_journal_migration_uuid_migrations",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_migration_journal"),
        sa.UniqueConstraint(
            "migration_uuid", "seq", name="uq_migration_journal_migration_uuid_seq"
        ),
    )
    op.create_index("ix_migration_journal_state", "migration_journal", ["state"])


def downgrade() -> None:
    op.drop_table("migration_journal")
    op.drop_table("migrations")
    op.drop_table("request_specs")
    op.drop_table("servers")
    op.drop_table("flavors")
