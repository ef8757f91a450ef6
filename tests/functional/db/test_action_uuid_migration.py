"""Revision 0014: instance actions and events recorded before it get a uuid each."""

import datetime

import sqlalchemy as sa
from alembic import command

from resize_sched.db import migration, models
from resize_sched.db.api import Database

STARTED = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)


def test_actions_and_events_recorded_before_get_a_uuid_each(empty_url: str) -> None:
    with Database(empty_url) as db:
        db.sync("0013")
        actions = sa.table(
            "instance_actions",
            *(sa.column(c) for c in ("id", "server_uuid", "request_id", "action")),
            sa.column("start_time", models.UTCDateTime()),
            sa.column("created_at", models.UTCDateTime()),
        )
        events = sa.table(
            "instance_action_events",
            *(sa.column(c) for c in ("id", "action_id", "event")),
            sa.column("start_time", models.UTCDateTime()),
            sa.column("created_at", models.UTCDateTime()),
        )
        when = {"start_time": STARTED, "created_at": STARTED}
        with db.engine.begin() as conn:
            # NOTE: the same request's action twice, as a doubled write left it.
            for i in (1, 2, 3):
                request = "req-2" if i == 3 else "req-1"
                conn.execute(
                    actions.insert().values(
                        id=i, server_uuid="s1", request_id=request, action="resize", **when
                    )
                )
                conn.execute(
                    events.insert().values(id=i, action_id=i, event="compute_prep_resize", **when)
                )
        db.sync()
        recorded = db.action_list("s1")
        assert len(recorded) == 3
        uuids = {a.uuid for a in recorded}
        uuids |= {e.uuid for a in recorded for e in db.action_events(a.id)}
        assert len(uuids) == 6 and None not in uuids
        # NOTE: and back: nothing lost on the way (SQLite rebuilds both tables).
        with db.engine.begin() as conn:
            command.downgrade(migration.alembic_config(conn), "0013")
        with db.engine.connect() as conn:
            kept = conn.execute(sa.select(sa.func.count()).select_from(events)).scalar()
    assert kept == 3
