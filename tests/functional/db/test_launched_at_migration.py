"""Revision 0005: servers that already ran get a launch time (their creation time)."""

import datetime

import sqlalchemy as sa

from resize_sched.db import models
from resize_sched.db.api import Database

CREATED = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)


def test_servers_that_ran_are_launched_at_their_creation(empty_url: str) -> None:
    with Database(empty_url) as db:
        db.sync("0004")
        rows = {
            "ran": ("h1", "active"),
            "resized": ("h1", "resized"),
            "deleted": ("h1", "deleted"),
            "spawning": ("h1", "building"),
            "unplaced": (None, "error"),
        }
        servers = sa.table(
            "servers",
            *(sa.column(c) for c in ("uuid", "name", "project_id", "user_id", "flavor")),
            *(sa.column(c) for c in ("host", "vm_state", "status", "needs_heal")),
            sa.column("created_at", models.UTCDateTime()),
        )
        with db.engine.begin() as conn:
            for name, (host, vm_state) in rows.items():
                conn.execute(
                    servers.insert().values(
                        uuid=name, name=name, project_id="p", user_id="u", flavor="{}",
                        host=host, vm_state=vm_state, status="ACTIVE", needs_heal=False,
                        created_at=CREATED,
                    )
                )  # fmt: skip
        db.sync()
        launched = {s.uuid: s.launched_at for s in db.server_list(read_deleted=True)}
    assert launched == {
        "ran": CREATED,
        "resized": CREATED,
        "deleted": CREATED,
        "spawning": None,
        "unplaced": None,
    }
