"""The database side of a restore racing an offload, on every backend: a
retried restore journals only while its server rests on its host, and an
offload does not begin while such an entry is ``intended``
(``tests/functional/conductor/test_restore_offload_race.py`` drives the two
against the real Placement)."""

import pytest

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.api import Database
from tests.functional.db.test_galera_faults import SOURCE_RP, _migration, _server

MISSING = {"server": {SOURCE_RP: {"VCPU": 2}}, "migration": {}}


def _failed_restore(db: Database) -> tuple[models.Server, models.Migration]:
    server = _server(db, status=models.STATUS_SHELVED, vm_state=models.VM_SHELVED)
    migration = _migration(db, server)
    db.migration_update(migration.uuid, status="error", missing=MISSING)
    return db.server_get(server.uuid), db.migration_get(migration.uuid)


def _restore_entry(db: Database, migration: models.Migration) -> models.JournalEntry:
    return db.journal_intend(migration.uuid, phase="restore", before={}, target=MISSING)


def _begin_offload(db: Database, read: models.Server) -> models.Server:
    return db.server_update(
        read.uuid,
        expected={
            "status": models.STATUS_SHELVED,
            "task_state": None,
            "updated_at": read.updated_at,
        },
        operation="shelve offload",
        task_state=models.TASK_SHELVING_OFFLOADING,
    )


def test_an_offload_does_not_begin_while_a_restore_is_written(db: Database) -> None:
    server, migration = _failed_restore(db)
    entry = _restore_entry(db, migration)
    # NOTE: the restore's entry wrote the server's row: a sweep that read it
    # before is refused on that, one that reads it now on the entry.
    seen = db.server_get(server.uuid)
    assert seen.updated_at != server.updated_at
    with pytest.raises(exception.ServerStateConflict, match="updated_at"):
        _begin_offload(db, server)
    # NOTE: the sweep's offload, the API's and a shelve report's alike.
    with pytest.raises(exception.ServerStateConflict, match="restore .* being written"):
        _begin_offload(db, seen)
    with pytest.raises(exception.ServerStateConflict, match="restore .* being written"):
        db.server_update(
            server.uuid,
            expected={"status": models.STATUS_SHELVED, "task_state": None},
            task_state=models.TASK_SHELVING_OFFLOADING,
        )
    db.journal_mark(entry.id, models.JOURNAL_APPLIED)
    assert _begin_offload(db, seen).task_state == models.TASK_SHELVING_OFFLOADING


@pytest.mark.parametrize(
    "change",
    [
        {"task_state": models.TASK_SHELVING_OFFLOADING},
        {"status": models.STATUS_SHELVED_OFFLOADED, "rp_uuid": None, "host": None},
    ],
    ids=["offloading", "offloaded"],
)
def test_a_restore_is_not_journaled_once_an_offload_began(
    db: Database, change: dict[str, object]
) -> None:
    server, migration = _failed_restore(db)
    db.server_update(server.uuid, **change)
    with pytest.raises(exception.StepNotDue, match="does not rest on its host"):
        _restore_entry(db, migration)
    assert [e.phase for e in db.journal_list(migration.uuid)] == []
    # NOTE: giving back is always allowed.
    db.journal_intend(migration.uuid, phase="release", before=MISSING, target={}, releasing=True)
