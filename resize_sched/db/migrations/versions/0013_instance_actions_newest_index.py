"""An index to find a server's newest action without reading other servers'.

Every conductor step looks up the newest action of its server among a few
names (``ORDER BY id DESC LIMIT 1``). With only ``(server_uuid,
request_id)`` to choose from, MariaDB and PostgreSQL both prefer to walk
the primary key backwards until a row of that server turns up once servers
have a few hundred actions each; for a server whose last resize is old that
is most of the table, on every step (and all of it when the server has no
such action). ``(server_uuid, id)`` hands them that server's actions
already in id order, so the newest is the first row read; the queries ask
in a way only this index answers in order (see
``resize_sched.db.action_api``).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-07
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_instance_actions_server_uuid_id", "instance_actions", ["server_uuid", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_instance_actions_server_uuid_id", table_name="instance_actions")
