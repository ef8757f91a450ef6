"""The scheduling policies' tables: server groups and their members, host
aggregates (with their hosts and metadata, availability zones among them),
quotas and quota classes, key pairs and flavor access; a server's
availability zone and key name, and the zone its request spec asks; a
compute node's failed builds in a row.

Existing servers are in no asked zone and have no key; existing nodes have
failed no build.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def UTCDateTime() -> sa.types.TypeEngine:  # noqa: N802 (reads as the model's type)
    # NOTE: frozen copy of models.UTCDateTime's DDL, as in 0001.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _stamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=True),
    ]


def _id() -> list[sa.Column]:
    return [sa.Column("id", sa.Integer(), autoincrement=True, nullable=False)]


def _child_of(table: str, parent: str, column: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{parent}.id"], name=f"fk_{table}_{column}_{parent}", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "server_groups",
        *_id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("policy", sa.String(32), nullable=False),
        sa.Column("rules", sa.JSON(), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_server_groups"),
        sa.UniqueConstraint("uuid", name="uq_server_groups_uuid"),
    )
    op.create_index("ix_server_groups_project_id", "server_groups", ["project_id"])
    op.create_table(
        "server_group_members",
        *_id(),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_server_group_members"),
        _child_of("server_group_members", "server_groups", "group_id"),
        sa.UniqueConstraint("server_uuid", name="uq_server_group_members_server_uuid"),
    )
    op.create_index("ix_server_group_members_group_id", "server_group_members", ["group_id"])

    op.create_table(
        "aggregates",
        *_id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_aggregates"),
        sa.UniqueConstraint("uuid", name="uq_aggregates_uuid"),
        sa.UniqueConstraint("name", name="uq_aggregates_name"),
    )
    op.create_table(
        "aggregate_hosts",
        *_id(),
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_aggregate_hosts"),
        _child_of("aggregate_hosts", "aggregates", "aggregate_id"),
        sa.UniqueConstraint("host", "aggregate_id", name="uq_aggregate_hosts_host_aggregate_id"),
    )
    op.create_index("ix_aggregate_hosts_host", "aggregate_hosts", ["host"])
    op.create_table(
        "aggregate_metadata",
        *_id(),
        sa.Column("aggregate_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_aggregate_metadata"),
        _child_of("aggregate_metadata", "aggregates", "aggregate_id"),
        sa.UniqueConstraint("aggregate_id", "key", name="uq_aggregate_metadata_aggregate_id_key"),
    )
    op.create_index("ix_aggregate_metadata_key", "aggregate_metadata", ["key"])

    op.create_table(
        "quotas",
        *_id(),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_quotas"),
        sa.UniqueConstraint(
            "project_id", "user_id", "resource", name="uq_quotas_project_id_user_id_resource"
        ),
    )
    op.create_table(
        "quota_classes",
        *_id(),
        sa.Column("class_name", sa.String(255), nullable=False),
        sa.Column("resource", sa.String(255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_quota_classes"),
        sa.UniqueConstraint("class_name", "resource", name="uq_quota_classes_class_name_resource"),
    )

    op.create_table(
        "key_pairs",
        *_id(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_key_pairs"),
        sa.UniqueConstraint("user_id", "name", name="uq_key_pairs_user_id_name"),
    )
    op.create_table(
        "flavor_projects",
        *_id(),
        sa.Column("flavor_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name="pk_flavor_projects"),
        _child_of("flavor_projects", "flavors", "flavor_id"),
        sa.UniqueConstraint(
            "flavor_id", "project_id", name="uq_flavor_projects_flavor_id_project_id"
        ),
    )

    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("availability_zone", sa.String(255), nullable=True))
        batch.add_column(sa.Column("key_name", sa.String(255), nullable=True))
    with op.batch_alter_table("request_specs") as batch:
        batch.add_column(sa.Column("availability_zone", sa.String(255), nullable=True))
    with op.batch_alter_table("compute_nodes") as batch:
        batch.add_column(
            sa.Column("failed_builds", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("compute_nodes") as batch:
        batch.drop_column("failed_builds")
    with op.batch_alter_table("request_specs") as batch:
        batch.drop_column("availability_zone")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("key_name")
        batch.drop_column("availability_zone")
    for table in (
        "flavor_projects",
        "key_pairs",
        "quota_classes",
        "quotas",
        "aggregate_metadata",
        "aggregate_hosts",
        "aggregates",
        "server_group_members",
        "server_groups",
    ):
        op.drop_table(table)
