"""Services, compute nodes, instance actions and their events; servers' image.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def UTCDateTime() -> sa.types.TypeEngine:  # noqa: N802 (reads as the model's type)
    # NOTE: frozen copy of models.UTCDateTime's DDL, as in 0001.
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("image_ref", sa.String(255), nullable=True))

    op.create_table(
        "services",
        sa.PrimaryKeyConstraint("id", name="pk_services"),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("binary", sa.String(255), nullable=False),
        sa.Column("topic", sa.String(255), nullable=True),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(255), nullable=True),
        sa.Column("forced_down", sa.Boolean(), nullable=False),
        sa.Column("report_count", sa.Integer(), nullable=False),
        sa.Column("last_seen_up", UTCDateTime(), nullable=True),
        sa.Column("version", sa.String(16), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uq_services_uuid"),
        sa.UniqueConstraint("host", "binary", name="uq_services_host_binary"),
    )
    op.create_table(
        "compute_nodes",
        sa.PrimaryKeyConstraint("id", name="pk_compute_nodes"),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("hypervisor_hostname", sa.String(255), nullable=False),
        sa.Column("hypervisor_type", sa.String(255), nullable=False),
        sa.Column("inventory", sa.JSON(), nullable=False),
        sa.Column("provider_generation", sa.Integer(), nullable=True),
        sa.Column("reported_at", UTCDateTime(), nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uq_compute_nodes_uuid"),
    )
    op.create_index("ix_compute_nodes_host", "compute_nodes", ["host"])
    op.create_table(
        "instance_actions",
        sa.PrimaryKeyConstraint("id", name="pk_instance_actions"),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("server_uuid", sa.String(36), nullable=False),
        sa.Column("request_id", sa.String(255), nullable=False),
        sa.Column("action", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("user_id", sa.String(255), nullable=True),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("finish_time", UTCDateTime(), nullable=True),
        sa.Column("message", sa.String(255), nullable=True),
        *_timestamps(),
    )
    op.create_index(
        "ix_instance_actions_server_uuid_request_id",
        "instance_actions",
        ["server_uuid", "request_id"],
    )
    op.create_table(
        "instance_action_events",
        sa.PrimaryKeyConstraint("id", name="pk_instance_action_events"),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column(
            "action_id",
            sa.Integer(),
            sa.ForeignKey(
                "instance_actions.id",
                name="fk_instance_action_events_action_id_instance_actions",
                ondelete="CASCADE",
            ),
            nullable=False,
        ),
        sa.Column("event", sa.String(255), nullable=False),
        sa.Column("start_time", UTCDateTime(), nullable=False),
        sa.Column("finish_time", UTCDateTime(), nullable=True),
        sa.Column("result", sa.String(255), nullable=True),
        sa.Column("traceback", sa.Text(), nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        *_timestamps(),
    )
    op.create_index("ix_instance_action_events_action_id", "instance_action_events", ["action_id"])


def downgrade() -> None:
    op.drop_table("instance_action_events")
    op.drop_table("instance_actions")
    op.drop_table("compute_nodes")
    op.drop_table("services")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("image_ref")
