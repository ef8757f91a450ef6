"""Racing writers: compare-and-swap lets exactly one of them win, every time.

Each racer is its own ``Database`` (its own engine and connection pool), like
two conductor workers sharing one database.
"""

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.api import Database

ROUNDS = 50
WON, LOST = "won", "lost"


@pytest.fixture
def other_worker(db: Database, backend_url: str) -> Iterator[Database]:
    other = Database(backend_url)
    yield other
    other.dispose()


def _race(calls: list[Callable[[], Any]], conflict: type[Exception]) -> list[object]:
    """Start every call at the same instant; return WON, LOST or the exception."""
    barrier = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            calls[i]()
            results[i] = WON
        except conflict:
            results[i] = LOST
        except Exception as exc:  # reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def _migration(db: Database, server: Any, flavor: Any, **kw: Any) -> models.Migration:
    return db.migration_create(
        server_uuid=server.uuid,
        source_host="h1",
        source_node=None,
        source_rp_uuid="rp1",
        old_flavor=flavor.to_snapshot(),
        new_flavor=flavor.to_snapshot(),
        old_resources={"VCPU": 1},
        new_resources={"VCPU": 1},
        claim_strategy="legacy",
        project_id="p",
        user_id="u",
        **kw,
    )


def test_two_resizes_of_one_server(db: Database, other_worker: Database) -> None:
    flavor = db.flavor_create("m1", 1, 512, 1)
    for round_ in range(ROUNDS):
        server = db.server_create(
            name=f"vm{round_}",
            project_id="p",
            user_id="u",
            flavor=flavor,
            status="ACTIVE",
            vm_state="active",
            task_state=None,
        )
        results = _race(
            [
                lambda uuid=server.uuid: db.server_start_resize(uuid),
                lambda uuid=server.uuid: other_worker.server_start_resize(uuid),
            ],
            exception.ServerStateConflict,
        )
        assert sorted(map(str, results)) == [LOST, WON], f"round {round_}: {results}"
        after = db.server_get(server.uuid)
        assert (after.status, after.task_state) == ("RESIZE", "resize_prep")


def test_two_status_changes_of_one_migration(db: Database, other_worker: Database) -> None:
    flavor = db.flavor_create("m1", 1, 512, 1)
    server = db.server_create(name="vm", project_id="p", user_id="u", flavor=flavor)
    for round_ in range(ROUNDS):
        migration = _migration(db, server, flavor, status=models.MIGRATION_FINISHED)
        results = _race(
            [
                lambda uuid=migration.uuid: db.migration_update(
                    uuid, expected_status="finished", status="confirming"
                ),
                lambda uuid=migration.uuid: other_worker.migration_update(
                    uuid, expected_status="finished", status="reverting"
                ),
            ],
            exception.MigrationStateConflict,
        )
        assert sorted(map(str, results)) == [LOST, WON], f"round {round_}: {results}"


def test_journal_appends_never_share_a_seq(db: Database, other_worker: Database) -> None:
    flavor = db.flavor_create("m1", 1, 512, 1)
    server = db.server_create(name="vm", project_id="p", user_id="u", flavor=flavor)
    migration = _migration(db, server, flavor)

    def append(database: Database) -> None:
        for _ in range(20):
            database.journal_intend(migration.uuid, phase="p", before={}, target={})

    results = _race([lambda: append(db), lambda: append(other_worker)], exception.Conflict)
    assert results == [WON, WON]
    assert [e.seq for e in db.journal_list(migration.uuid)] == list(range(1, 41))


def test_two_sweepers_take_one_stalled_server_or_migration_on(
    db: Database, other_worker: Database
) -> None:
    """Each sweeper read the row itself; stamping it is a compare-and-swap on
    when it last changed, so exactly one of them takes it on."""
    flavor = db.flavor_create("m1", 1, 512, 1)
    for round_ in range(ROUNDS // 2):
        server = db.server_create(name=f"vm{round_}", project_id="p", user_id="u", flavor=flavor)
        seen = [w.server_get(server.uuid) for w in (db, other_worker)]
        results = _race(
            [
                lambda w=w, row=row: w.server_touch(
                    row.uuid,
                    expected={"status": row.status, "updated_at": row.updated_at},
                    operation="resume the build",
                )
                for w, row in zip((db, other_worker), seen, strict=True)
            ],
            exception.ServerStateConflict,
        )
        assert sorted(map(str, results)) == [LOST, WON], f"server round {round_}: {results}"
        migration = _migration(db, server, flavor)
        seen = [db.migration_get(migration.uuid), other_worker.migration_get(migration.uuid)]
        results = _race(
            [
                lambda w=w, row=row: w.migration_touch(row.uuid, seen=row)
                for w, row in zip((db, other_worker), seen, strict=True)
            ],
            exception.MigrationStateConflict,
        )
        assert sorted(map(str, results)) == [LOST, WON], f"migration round {round_}: {results}"


def test_first_journal_entries_of_different_migrations_never_deadlock(
    db: Database, backend_url: str
) -> None:
    """Four executors each start their own resizes' journals at once. (A
    locking read of a journal with no entries took a gap lock on MariaDB,
    and such inserts deadlocked each other.)"""
    flavor = db.flavor_create("m1", 1, 512, 1)
    server = db.server_create(name="vm", project_id="p", user_id="u", flavor=flavor)
    migrations = [_migration(db, server, flavor).uuid for _ in range(ROUNDS * 4)]
    workers = [Database(backend_url) for _ in range(4)]

    def append(database: Database, mine: list[str]) -> None:
        for uuid in mine:
            database.journal_intend(uuid, phase="claim", before={}, target={})

    try:
        results = _race(
            [lambda w=w, i=i: append(w, migrations[i::4]) for i, w in enumerate(workers)],
            exception.Conflict,
        )
    finally:
        for worker in workers:
            worker.dispose()
    assert results == [WON] * 4
    assert all([e.seq for e in db.journal_list(m)] == [1] for m in migrations)
