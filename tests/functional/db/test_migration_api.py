"""Migrations and their journal: records, compare-and-swap status, in-flight lists."""

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched import exception
from resize_sched.db import action_api, models
from resize_sched.db.api import Database
from resize_sched.db.steps import StepEvent, StepRun

SOURCE_RP = "11111111-1111-1111-1111-111111111111"
DEST_RP = "22222222-2222-2222-2222-222222222222"


@pytest.fixture
def server(db: Database) -> models.Server:
    flavor = db.flavor_create("m1", 2, 2048, 10, flavorid="1")
    return db.server_create(
        name="vm",
        project_id="p1",
        user_id="u1",
        flavor=flavor,
        status="ACTIVE",
        vm_state="active",
        task_state=None,
        host="host1",
        rp_uuid=SOURCE_RP,
    )


def _migration(db: Database, server: models.Server, **kwargs: object) -> models.Migration:
    args: dict = {
        "server_uuid": server.uuid,
        "source_host": "host1",
        "source_node": "node1",
        "source_rp_uuid": SOURCE_RP,
        "old_flavor": server.flavor,
        "new_flavor": dict(server.flavor, vcpus=4, id="2"),
        "old_resources": {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10},
        "new_resources": {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10},
        "claim_strategy": "max_flavor",
        "project_id": "p1",
        "user_id": "u1",
    }
    return db.migration_create(**(args | kwargs))


def test_create_and_get(db: Database, server: models.Server) -> None:
    migration = _migration(db, server)
    assert migration.id is not None
    assert (migration.status, migration.migration_type) == ("pre-migrating", "resize")
    got = db.migration_get(migration.uuid)
    assert got.id == migration.id
    assert db.migration_get_by_id(migration.id).uuid == migration.uuid
    assert got.new_flavor["vcpus"] == 4
    assert got.new_resources == {"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10}
    assert (got.alternates, got.holdings, got.missing) == ([], None, None)
    assert got.claim_strategy == "max_flavor"
    assert got.created_at.tzinfo is not None


def test_create_errors(db: Database, server: models.Server) -> None:
    with pytest.raises(exception.ServerNotFound):
        _migration(db, server, server_uuid="nope")
    with pytest.raises(exception.Invalid, match="unknown migration status"):
        _migration(db, server, status="finishing")
    with pytest.raises(exception.Invalid, match="unknown migration type"):
        _migration(db, server, migration_type="live")
    with pytest.raises(exception.Invalid, match="negative amount"):
        _migration(db, server, new_resources={"VCPU": -4})
    with pytest.raises(exception.Invalid, match="claim strategy"):
        _migration(db, server, claim_strategy="")
    assert db.migration_list() == []
    migration = _migration(db, server)
    with pytest.raises(exception.Conflict, match="already exists"):
        _migration(db, server, uuid=migration.uuid)
    with pytest.raises(exception.MigrationNotFound, match="Migration nope could not be found"):
        db.migration_get("nope")
    with pytest.raises(exception.MigrationNotFound):
        db.migration_get_by_id(987654)


def test_update_compare_and_swap(db: Database, server: models.Server) -> None:
    migration = _migration(db, server)
    holdings = {
        "server": {},
        "migration": {SOURCE_RP: {"VCPU": 2}},
        "generations": {"server": 3, "migration": None},
    }
    updated = db.migration_update(
        migration.uuid,
        expected_status="pre-migrating",
        status="migrating",
        dest_host="host2",
        dest_rp_uuid=DEST_RP,
        alternates=[{"host": "host3", "allocation_request": {"allocations": {}}}],
        holdings=holdings,
    )
    assert (updated.status, updated.dest_host, updated.holdings) == (
        "migrating",
        "host2",
        holdings,
    )
    assert updated.alternates[0]["host"] == "host3"
    assert updated.updated_at is not None

    with pytest.raises(exception.MigrationStateConflict) as info:
        db.migration_update(
            migration.uuid,
            expected_status=("pre-migrating", "finished"),
            operation="confirm",
            status="confirming",
        )
    assert str(info.value) == (
        f"Migration {migration.uuid} is migrating; confirm needs it to be "
        "pre-migrating or finished."
    )
    assert db.migration_get(migration.uuid).status == "migrating"
    with pytest.raises(exception.Invalid, match="unknown error kind"):
        db.migration_update(migration.uuid, error_kind="bad")
    with pytest.raises(exception.Invalid, match="cannot update migration field"):
        db.migration_update(migration.uuid, uuid="x")
    with pytest.raises(exception.MigrationNotFound):
        db.migration_update("nope", status="error")


def test_lists(db: Database, server: models.Server) -> None:
    done = _migration(db, server, status="confirmed")
    failed = _migration(db, server)
    db.migration_update(
        failed.uuid, status="error", error_kind="deferred", error_reason="no room now"
    )
    stranded = _migration(db, server)
    db.migration_update(
        stranded.uuid,
        status="error",
        error_kind="failed",
        missing={"server": {SOURCE_RP: {"DISK_GB": 10}}},
    )
    active = _migration(db, server, status="finished")

    assert [m.uuid for m in db.migration_list()] == [
        done.uuid,
        failed.uuid,
        stranded.uuid,
        active.uuid,
    ]
    assert [m.uuid for m in db.migration_list(statuses=["error"])] == [
        failed.uuid,
        stranded.uuid,
    ]
    assert [m.uuid for m in db.migration_list(server_uuid=server.uuid, statuses="finished")] == [
        active.uuid
    ]
    assert db.migration_list(server_uuid="other") == []
    assert [m.uuid for m in db.migration_list_in_flight()] == [stranded.uuid, active.uuid]
    in_progress = db.migration_get_in_progress_for_server(server.uuid)
    assert in_progress is not None and in_progress.uuid == active.uuid
    db.migration_update(active.uuid, expected_status="finished", status="confirmed")
    assert db.migration_get_in_progress_for_server(server.uuid) is None
    # Once healed, nothing is missing and the error is final.
    db.migration_update(stranded.uuid, missing=None)
    assert db.migration_list_in_flight() == []
    assert db.migration_get(failed.uuid).error_reason == "no room now"


def test_in_flight_statuses() -> None:
    assert set(models.IN_FLIGHT_STATUSES) == {
        "pre-migrating",
        "migrating",
        "post-migrating",
        "finished",
        "confirming",
        "reverting",
        # a live migration's, and an evacuation's until its source is back
        "accepted",
        "preparing",
        "running",
        "done",
    }


def test_journal(db: Database, server: models.Server) -> None:
    migration = _migration(db, server)
    before = {"server": {SOURCE_RP: {"VCPU": 2}}, "migration": {}}
    target = {"server": {}, "migration": {SOURCE_RP: {"VCPU": 2}}}
    first = db.journal_intend(migration.uuid, phase="prepare", before=before, target=target)
    second = db.journal_intend(migration.uuid, phase="claim", before=target, target=before)
    assert (first.seq, second.seq) == (1, 2)
    assert first.state == "intended" and first.created_at.tzinfo is not None
    assert [e.id for e in db.journal_pending()] == [first.id, second.id]

    applied = db.journal_mark(first.id, "applied")
    assert applied.state == "applied" and applied.updated_at is not None
    db.journal_mark(second.id, "abandoned", detail="claim refused on host2")
    entries = db.journal_list(migration.uuid)
    assert [(e.seq, e.phase, e.state) for e in entries] == [
        (1, "prepare", "applied"),
        (2, "claim", "abandoned"),
    ]
    assert entries[0].before == before and entries[0].target == target
    assert entries[1].detail == "claim refused on host2"
    assert db.journal_pending() == []

    with pytest.raises(exception.Conflict, match="is applied; only an intended"):
        db.journal_mark(first.id, "abandoned")
    with pytest.raises(exception.Invalid, match="applied or abandoned"):
        db.journal_mark(first.id, "intended")
    with pytest.raises(exception.NotFound, match="journal entry"):
        db.journal_mark(987654, "applied")
    with pytest.raises(exception.MigrationNotFound):
        db.journal_intend("nope", phase="prepare", before={}, target={})
    assert db.journal_list("nope") == []


def test_journal_seq_is_per_migration(db: Database, server: models.Server) -> None:
    a = _migration(db, server)
    b = _migration(db, server)
    db.journal_intend(a.uuid, phase="p", before={}, target={})
    db.journal_intend(a.uuid, phase="p", before={}, target={})
    assert db.journal_intend(b.uuid, phase="p", before={}, target={}).seq == 1


@contextlib.contextmanager
def _statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def executed(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().upper().startswith("BEGIN"):
            seen.append(" ".join(statement.split()))

    sa.event.listen(db.engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", executed)


def _columns(row: models.Migration) -> dict[str, Any]:
    return {a.key: getattr(row, a.key) for a in sa.inspect(models.Migration).column_attrs}


def test_journal_intend_gives_the_row_it_was_shown_back_updated(
    db: Database, server: models.Server
) -> None:
    migration = db.migration_update(_migration(db, server).uuid, status="migrating")
    holdings = {
        "server": {SOURCE_RP: {"VCPU": 2}},
        "migration": {},
        "generations": {"server": 4, "migration": None},
    }
    with _statements(db) as statements:
        entry = db.journal_intend(
            migration.uuid,
            phase="claim",
            before={},
            target={},
            holdings=holdings,
            seen=migration,
        )
    # The row is unchanged since it was read: not read back, and yet exactly
    # what a read gives, updated_at included.
    assert len(statements) == 3, statements
    updated = entry.migration  # type: ignore[attr-defined]
    assert _columns(updated) == _columns(db.migration_get(migration.uuid))
    assert updated.holdings == holdings and updated.updated_at != migration.updated_at
    assert sa.inspect(updated).detached
    assert (entry.seq, entry.phase, entry.state) == (1, "claim", "intended")
    assert entry.created_at.tzinfo is not None and entry.id is not None

    # A copy shown in turn is as good as a read; one that changed meanwhile
    # is read back.
    again = db.journal_intend(
        migration.uuid, phase="claim", before={}, target={}, holdings={}, seen=updated
    ).migration  # type: ignore[attr-defined]
    assert _columns(again) == _columns(db.migration_get(migration.uuid))
    db.migration_update(migration.uuid, dest_host="host2")
    stale = db.journal_intend(
        migration.uuid, phase="claim", before={}, target={}, holdings=holdings, seen=again
    ).migration  # type: ignore[attr-defined]
    assert stale.dest_host == "host2"
    assert _columns(stale) == _columns(db.migration_get(migration.uuid))
    assert [e.seq for e in db.journal_list(migration.uuid)] == [1, 2, 3]


def test_step_begin_reads_the_request_spec_with_the_migration(
    db: Database, server: models.Server
) -> None:
    migration = _migration(db, server)
    run = StepRun(migration.uuid, "token-1", "schedule", load_request_spec=True)
    taken = db.step_begin(run, "pre-migrating")
    assert taken.task_owner == "token-1" and run.server_uuid == server.uuid
    assert run.request_spec_loaded and run.request_spec is None  # it has none
    db.step_end(run)

    db.request_spec_create(server.uuid, resources={"VCPU": 2}, required_traits=[])
    run = StepRun(migration.uuid, "token-2", "schedule", load_request_spec=True)
    db.step_begin(run, "pre-migrating")
    assert run.request_spec.server_uuid == server.uuid
    assert run.request_spec.resources == {"VCPU": 2}
    db.step_end(run)

    run = StepRun(migration.uuid, "token-3", "confirm")
    db.step_begin(run, "pre-migrating")
    assert not run.request_spec_loaded and run.request_spec is None
    # A run with no event gives the migration back without reading its server.
    with _statements(db) as statements:
        db.step_end(run)
    assert [s.split(" ", 2)[:2] for s in statements] == [["UPDATE", "migrations"]]
    assert db.migration_get(migration.uuid).task_owner is None


def test_an_advance_that_ends_a_run_may_skip_reading_back(
    db: Database, server: models.Server
) -> None:
    migration = _migration(db, server)
    db.action_start(server.uuid, "req-1", action_api.RESIZE, user_id="u", project_id="p")
    event = StepEvent("conductor_migrate_server", (action_api.RESIZE,), "c1")
    run = StepRun(migration.uuid, "token-1", "schedule", event)
    db.step_begin(run, "pre-migrating")
    with pytest.raises(exception.Invalid, match="its own token"):
        db.migration_advance(
            migration.uuid, token="other", ends=run, expected_status="pre-migrating", step="x"
        )
    assert (
        db.migration_advance(
            migration.uuid,
            ends=run,
            reload=False,
            expected_status="pre-migrating",
            step="claim",
            status="migrating",
        )
        is None
    )
    row = db.migration_get(migration.uuid)
    assert (row.status, row.task_owner) == ("migrating", None) and run.ended
    action = db.action_get_by_request_id(server.uuid, "req-1")
    assert action is not None
    assert [(e.event, e.result) for e in db.action_events(action.id)] == [
        ("conductor_migrate_server", "Success")
    ]
    # Not read back and no run to know the server by: it is found by the migration.
    assert (
        db.migration_advance(
            migration.uuid,
            reload=False,
            expected_status="migrating",
            step="prepared",
            status="post-migrating",
            server_values={"task_state": "resize_migrating"},
        )
        is None
    )
    assert db.server_get(server.uuid).task_state == "resize_migrating"
    db.server_update(server.uuid, task_state="deleting")
    with pytest.raises(exception.StepNotDue, match="its server is deleting"):
        db.migration_advance(
            migration.uuid,
            reload=False,
            expected_status="post-migrating",
            step="finish",
            status="finished",
        )
    assert db.migration_get(migration.uuid).status == "post-migrating"


def test_step_begin_opens_the_event_in_its_own_server_s_newest_action(
    db: Database, server: models.Server
) -> None:
    other = db.server_create(name="vm2", project_id="p1", user_id="u1", flavor=server.flavor)
    mine, theirs = _migration(db, server), _migration(db, other)
    event = StepEvent("conductor_migrate_server", (action_api.RESIZE,), "c1")

    def begin(migration: models.Migration) -> StepRun:
        run = StepRun(migration.uuid, f"t{migration.id}", "schedule", event)
        db.step_begin(run, "pre-migrating")
        return run

    def events(server_uuid: str, request_id: str) -> list[tuple[str, str | None]]:
        action = db.action_get_by_request_id(server_uuid, request_id)
        assert action is not None
        return [(e.event, e.host) for e in db.action_events(action.id)]

    # No action of its own server (only the other's): no event.
    db.action_start(other.uuid, "req-other", action_api.RESIZE, user_id="u", project_id="p")
    run = begin(mine)
    assert run.event_id is None
    db.step_end(run, not_due=True)
    assert events(other.uuid, "req-other") == []

    db.action_start(server.uuid, "req-old", action_api.RESIZE, user_id="u", project_id="p")
    db.action_start(server.uuid, "req-new", action_api.RESIZE, user_id="u", project_id="p")
    db.action_start(other.uuid, "req-other-2", action_api.RESIZE, user_id="u", project_id="p")
    # The other server's (newer) action has the event open: not this one's.
    db.action_event_start(other.uuid, "conductor_migrate_server", (action_api.RESIZE,))
    run = begin(mine)
    assert run.event_id is not None
    assert events(server.uuid, "req-new") == [("conductor_migrate_server", "c1")]
    assert events(server.uuid, "req-old") == []
    assert events(other.uuid, "req-other-2") == [("conductor_migrate_server", None)]
    newest = db.action_get_by_request_id(server.uuid, "req-new")
    assert newest is not None and newest.updated_at is not None
    db.step_end(run, error=RuntimeError("boom"))

    # An event of that name still open (on no host) is reused, not doubled.
    run = begin(theirs)
    assert run.event_id is None
    assert events(other.uuid, "req-other-2") == [("conductor_migrate_server", None)]
    db.step_end(run)
    action = db.action_get_by_request_id(other.uuid, "req-other-2")
    assert action is not None
    assert [(e.result, e.host) for e in db.action_events(action.id)] == [("Success", "c1")]


def test_an_advance_is_refused_to_a_step_that_no_longer_owns_the_migration(
    db: Database, server: models.Server
) -> None:
    """The ownership condition of ``migration_advance``: a step the sweep took
    over, and a report with no token while a step holds the migration, are
    both refused, and change nothing."""
    migration = _migration(db, server)
    first = StepRun(migration.uuid, "token-first", "schedule")
    taken = db.step_begin(first, "pre-migrating")
    # The sweep finds it stalled and takes it on; its own run takes it next.
    db.migration_touch(migration.uuid, seen=taken)
    sweep = StepRun(migration.uuid, "token-sweep", "schedule")
    db.step_begin(sweep, "pre-migrating")
    with pytest.raises(exception.StepNotDue, match="taken over"):
        db.migration_advance(
            migration.uuid,
            ends=first,
            expected_status="pre-migrating",
            step="claim",
            status="migrating",
            server_values={"task_state": "resize_migrating"},
        )
    # A report that carries no token (as resize_finished's) while the sweep's
    # step holds the migration.
    with pytest.raises(exception.StepNotDue, match="taken over"):
        db.migration_advance(
            migration.uuid,
            expected_status="pre-migrating",
            step="finish",
            status="finished",
            server_values={"status": "VERIFY_RESIZE"},
        )
    row = db.migration_get(migration.uuid)
    assert (row.status, row.task_owner) == ("pre-migrating", "token-sweep")
    assert (db.server_get(server.uuid).status, db.server_get(server.uuid).task_state) == (
        "ACTIVE",
        None,
    )
    # The owner itself goes ahead.
    db.migration_advance(
        migration.uuid,
        ends=sweep,
        expected_status="pre-migrating",
        step="claim",
        status="migrating",
    )
    assert db.migration_get(migration.uuid).status == "migrating"
