"""Instance actions and their events get a unique ``uuid``, so that a write
run again after a COMMIT whose answer was lost cannot record them twice.

Every other table a service inserts into already has a key the row is found
by (a uuid the caller chose, or a natural one: a service's host and binary,
a key pair's user and name, an aggregate's name...). Actions and events
had only their autoincrement ``id``: a run again that did not yet see the
earlier run's row (on Galera, a node that had not applied it yet) wrote a
second one. Now an action's uuid is made from what identifies it (server,
request, action name) and an event's from the data API call that made it,
the same in every run of that call; the database refuses the second row.

Existing rows get a uuid of their own (random: no earlier row can clash
with a new one's).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

import contextlib
import uuid
from collections.abc import Iterator, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("instance_actions", "instance_action_events")

#: rows given their uuid per statement while filling existing rows in
_BATCH = 500


def _backfill(table_name: str) -> None:
    bind = op.get_bind()
    table = sa.table(table_name, sa.column("id", sa.Integer), sa.column("uuid", sa.String(36)))
    ids = list(bind.scalars(sa.select(table.c.id).where(table.c.uuid.is_(None))))
    update = (
        sa.update(table).where(table.c.id == sa.bindparam("row_id")).values(uuid=sa.bindparam("u"))
    )
    for start in range(0, len(ids), _BATCH):
        rows = [{"row_id": i, "u": str(uuid.uuid4())} for i in ids[start : start + _BATCH]]
        bind.execute(update, rows)


@contextlib.contextmanager
def _events_kept(name: str) -> Iterator[None]:
    """On SQLite, around a rebuild of ``instance_actions``: a rebuild drops
    the old table, and with foreign keys enforced the drop deletes its rows
    first, and with them, by ``ON DELETE CASCADE``, every event. The events
    are copied aside and put back once the new table holds the actions."""
    if name != "instance_actions" or op.get_bind().dialect.name != "sqlite":
        yield
        return
    op.execute("CREATE TEMPORARY TABLE events_kept AS SELECT * FROM instance_action_events")
    yield
    op.execute("DELETE FROM instance_action_events")
    op.execute("INSERT INTO instance_action_events SELECT * FROM events_kept")
    op.execute("DROP TABLE events_kept")


def upgrade() -> None:
    # NOTE: the events first: the actions' rebuild on SQLite keeps them as
    # they are then, uuid included.
    for name in reversed(_TABLES):
        with op.batch_alter_table(name) as batch:
            batch.add_column(sa.Column("uuid", sa.String(36), nullable=True))
        _backfill(name)
        with _events_kept(name), op.batch_alter_table(name) as batch:
            batch.alter_column("uuid", existing_type=sa.String(36), nullable=False)
            batch.create_unique_constraint(f"uq_{name}_uuid", ["uuid"])


def downgrade() -> None:
    for name in _TABLES:
        with _events_kept(name), op.batch_alter_table(name) as batch:
            batch.drop_constraint(f"uq_{name}_uuid", type_="unique")
            batch.drop_column("uuid")
