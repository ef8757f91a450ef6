"""A conductor step's bookkeeping rides on its own transactions (db/steps.py).

The real Placement and database: a schedule that claims at once commits
twice (intent with the take, advance) and runs 11 statements, and whatever
way a step ends, its journal entries are settled, its event recorded and its
migration given back.
"""

from typing import Any

import pytest

from resize_sched import exception
from resize_sched.context import RequestContext
from resize_sched.db import action_api, models
from tests.functional.fixtures.cloud import Cloud, expect_no_valid_host

OLD = {"vcpus": 1, "memory_mb": 1024, "disk_gb": 10}
NEW = {"vcpus": 2, "memory_mb": 2048, "disk_gb": 20}


def _resize(make_cloud: Any, strategy: str, vcpus: int = 8) -> tuple[Cloud, Any, Any]:
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    cloud.add_host("host1", vcpus=vcpus, memory_mb=8192, disk_gb=100)
    server = cloud.boot("vm", cloud.flavor("old", **OLD), host="host1")
    migration = cloud.resizes.begin(server.uuid, cloud.flavor("new", **NEW).flavorid)
    cloud.db.action_start(
        server.uuid, "req-bookkeeping", action_api.RESIZE, user_id="u", project_id="p"
    )
    return cloud, server, migration


def _events(cloud: Cloud, server_uuid: str) -> list[tuple[str, str | None]]:
    action = cloud.db.action_get_by_request_id(server_uuid, "req-bookkeeping")
    return [(e.event, e.result) for e in cloud.db.action_events(action.id)]


def test_a_schedule_that_claims_at_once_is_two_commits(make_cloud: Any) -> None:
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    with cloud.commits(writes_only=True) as commits:
        dest = cloud.resizes.schedule(migration.uuid)
    assert dest is not None and dest.same_host
    assert commits[0] == 2  # take + event + intent + holdings, advance + mark + event + release
    row = cloud.db.migration_get(migration.uuid)
    assert (row.status, row.task_owner) == ("migrating", None)
    assert [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        ("claim", "applied")
    ]
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    cloud.check()


def test_an_entry_applied_mid_step_is_marked_by_the_next_intent(make_cloud: Any) -> None:
    # legacy writes twice in one schedule: prepare, then the claim.
    cloud, server, migration = _resize(make_cloud, "legacy")
    seen: list[list[str]] = []
    intend = cloud.db.journal_intend

    def journal_intend(*args: Any, **kwargs: Any) -> Any:
        entry = intend(*args, **kwargs)
        seen.append([e.state for e in cloud.db.journal_list(migration.uuid)])
        return entry

    cloud.db.journal_intend = journal_intend  # type: ignore[method-assign]
    with cloud.commits(writes_only=True) as commits:
        cloud.resizes.schedule(migration.uuid)
    # At the claim's intent the prepare entry is applied already: one
    # transaction marked it and journaled the claim.
    assert seen == [["intended"], ["applied", "intended"]]
    assert commits[0] == 3  # the prepare's intent takes the migration
    assert [e.state for e in cloud.db.journal_list(migration.uuid)] == ["applied", "applied"]
    cloud.check()


@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "max_flavor"])
def test_a_step_that_fails_settles_its_entries_records_error_and_lets_go(
    make_cloud: Any, strategy: str
) -> None:
    # No room anywhere: the resize fails and the server gets its allocation
    # back (drop_and_reclaim wrote its drop; max_flavor fails having
    # written nothing, so it takes the migration to fail it).
    cloud, server, migration = _resize(make_cloud, strategy, vcpus=1)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "infeasible")
    row = cloud.db.migration_get(migration.uuid)
    assert (row.status, row.task_owner) == ("error", None)
    assert {e.state for e in cloud.db.journal_list(migration.uuid)} <= {"applied"}
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Error")]
    cloud.check()


def test_a_step_not_due_after_all_leaves_no_event_and_lets_go(make_cloud: Any) -> None:
    cloud, server, migration = _resize(make_cloud, "max_flavor")

    def delete_first(selection: Any) -> None:
        # A delete recorded between the query and the claim.
        cloud.db.server_update(server.uuid, task_state="deleting")

    cloud.after_scheduling(delete_first)
    assert cloud.resizes.schedule(migration.uuid) is None
    row = cloud.db.migration_get(migration.uuid)
    assert row.task_owner is None
    assert _events(cloud, server.uuid) == []
    assert cloud.holds(migration.uuid) == {}


def test_a_second_delivery_changes_nothing(make_cloud: Any) -> None:
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    cloud.resizes.schedule(migration.uuid)
    before = cloud.db.journal_list(migration.uuid)
    with cloud.commits(writes_only=True) as commits:
        assert cloud.resizes.schedule(migration.uuid) is None
    assert commits[0] == 0  # the read that finds it not due, and nothing more
    assert len(cloud.db.journal_list(migration.uuid)) == len(before)
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    assert cloud.db.migration_get(migration.uuid).task_owner is None


def test_a_schedule_that_claims_at_once_runs_few_statements(make_cloud: Any) -> None:
    # Each statement is a round trip: count them, so that one more fails here.
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    with cloud.statements() as statements:
        dest = cloud.resizes.schedule(migration.uuid)
    assert dest is not None
    verbs = [s.split(" ", 2)[:2] for s in statements]
    assert verbs == [
        # the step's read: the migration with its request spec, whether its
        # server is live, the action and open event, the journal's last seq
        ["SELECT", "migrations.id,"],
        # the policies: the source host's zone, which a move stays in
        ["SELECT", "aggregate_metadata.value,"],
        # intent: the take's compare-and-swap with the holdings (not read
        # back), the event, the action's updated_at, the entry (numbered
        # after the seq read, the row being still as read)
        ["UPDATE", "migrations"],
        ["INSERT", "INTO"],
        ["UPDATE", "instance_actions"],
        ["INSERT", "INTO"],
        # advance: the migration (not read back), its server, the entry's
        # mark, the event, the action's updated_at
        ["UPDATE", "migrations"],
        ["UPDATE", "servers"],
        ["UPDATE", "migration_journal"],
        ["UPDATE", "instance_action_events"],
        ["UPDATE", "instance_actions"],
    ], "\n".join(statements)
    assert len(statements) == 11
    assert "request_specs" in statements[0] and "instance_action_events" in statements[0]
    assert "max(migration_journal.seq)" in statements[0]
    assert "holdings" in statements[2] and "task_owner" in statements[2]
    assert "migration_journal" in statements[5]
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    cloud.check()


def test_a_delivery_that_read_before_another_claimed_writes_nothing(make_cloud: Any) -> None:
    # The schedule takes its migration with its first intent: a second
    # delivery that read the migration while it was still pre-migrating
    # finds it taken (then handed on) at that intent, and stops there.
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    other: list[Any] = []

    def the_other_delivery_first(selection: Any) -> None:
        if not other:
            other.append(None)  # the other's own query comes back here
            other[0] = cloud.resizes.schedule(migration.uuid)

    cloud.after_scheduling(the_other_delivery_first)
    assert cloud.resizes.schedule(migration.uuid) is None
    assert other[0] is not None
    row = cloud.db.migration_get(migration.uuid)
    assert (row.status, row.task_owner, row.dest_host) == ("migrating", None, "host1")
    assert [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        ("claim", "applied")
    ]
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    cloud.check()


def test_a_delivery_that_read_before_another_claimed_fails_nothing(make_cloud: Any) -> None:
    # The late delivery finds no host (the other took the room): its
    # failure must not end the resize the other claimed and handed on.
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    other: list[Any] = []

    def the_other_delivery_first(selection: Any) -> None:
        if not other:
            other.append(None)  # the other's own query comes back here
            other[0] = cloud.resizes.schedule(migration.uuid)
            raise exception.NoValidHost(kind="deferred", reason="the other delivery took it")

    cloud.after_scheduling(the_other_delivery_first)
    assert cloud.resizes.schedule(migration.uuid) is None
    assert other[0] is not None
    row = cloud.db.migration_get(migration.uuid)
    assert (row.status, row.task_owner, row.error_kind) == ("migrating", None, None)
    assert cloud.db.server_get(server.uuid).status == "RESIZE"
    assert [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        ("claim", "applied")
    ]
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    cloud.check()


def test_a_delivery_whose_query_failed_after_another_claimed_records_nothing(
    make_cloud: Any,
) -> None:
    # Its twin took the migration while it queried; its own query then
    # failed: the step was not due after all, so no Error is recorded.
    cloud, server, migration = _resize(make_cloud, "max_flavor")
    other: list[Any] = []

    def the_other_delivery_first(selection: Any) -> None:
        if not other:
            other.append(None)  # the other's own query comes back here
            other[0] = cloud.resizes.schedule(migration.uuid)
            raise exception.PlacementUnavailable(
                method="GET", url="/allocation_candidates", reason="timed out"
            )

    cloud.after_scheduling(the_other_delivery_first)
    with pytest.raises(exception.PlacementUnavailable):
        cloud.resizes.schedule(migration.uuid)
    assert other[0] is not None
    assert cloud.db.migration_get(migration.uuid).status == "migrating"
    assert _events(cloud, server.uuid) == [("conductor_migrate_server", "Success")]
    cloud.check()


def _append_behind_the_step(cloud: Cloud, migration_uuid: str, *, touch_row: bool) -> None:
    """An entry appended to the journal after the step's read: through the
    journal (which moves the migration's ``updated_at`` on) or, breaking
    that rule, straight into the table."""
    if touch_row:
        cloud.db.journal_intend(migration_uuid, phase="audit", before={}, target={})
        return
    with cloud.db._writer() as session:
        session.add(
            models.JournalEntry(
                migration_uuid=migration_uuid,
                seq=1,
                phase="audit",
                before={},
                target={},
                state=models.JOURNAL_APPLIED,
            )
        )


@pytest.mark.parametrize("touch_row", [True, False], ids=["through the journal", "raw"])
def test_an_entry_appended_after_the_read_is_numbered_after(
    make_cloud: Any, touch_row: bool
) -> None:
    # The take numbers its entry after the seq its read brought only while
    # the row is as read; an append since moved the row on, so the seq is
    # read again. Even an insert that did not (raw) cannot be overwritten:
    # the (migration_uuid, seq) key refuses the stale number and the next
    # attempt reads it.
    cloud, server, migration = _resize(make_cloud, "max_flavor")

    def append(selection: Any) -> None:
        _append_behind_the_step(cloud, migration.uuid, touch_row=touch_row)

    cloud.after_scheduling(append)
    assert cloud.resizes.schedule(migration.uuid) is not None
    assert [(e.seq, e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        (1, "audit", "intended" if touch_row else "applied"),
        (2, "claim", "applied"),
    ]
    assert cloud.db.migration_get(migration.uuid).status == "migrating"


@pytest.mark.parametrize("prefer", [True, False], ids=["prefer_same_host", "every host"])
def test_the_source_judged_from_its_node_is_not_read_again(make_cloud: Any, prefer: bool) -> None:
    # The source's compute node, read to judge it, makes its host state:
    # the filters' read covers the other hosts only.
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True, "prefer_same_host": prefer})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=2, memory_mb=2048, disk_gb=20)
    server = cloud.boot("vm", cloud.flavor("old", **OLD), host="host1")
    migration = cloud.resizes.begin(server.uuid, cloud.flavor("new", **NEW).flavorid)
    asked: list[set[str]] = []
    real = cloud.db.host_state_nodes

    def host_state_nodes(uuids: Any, **kwargs: Any) -> Any:
        uuids = list(uuids)
        asked.append(set(uuids))
        return real(uuids, **kwargs)

    cloud.db.host_state_nodes = host_state_nodes  # type: ignore[method-assign]
    dest = cloud.resizes.schedule(migration.uuid)
    assert dest is not None and dest.host == "host1" and dest.same_host
    assert all(cloud.hosts["host1"] not in uuids for uuids in asked), asked
    cloud.check()


#: how the journal's locking read of the migration starts
_LOCK = "SELECT migrations.id, migrations.task_owner, migrations.server_uuid"


def test_a_second_intent_of_the_step_locks_nothing(make_cloud: Any) -> None:
    # drop_and_reclaim writes twice: its drop (the take's intent), then the
    # claim. The claim's intent finds the row as the drop left it, so one
    # compare-and-swap stands for the lock and the seq is the drop's next.
    cloud, server, migration = _resize(make_cloud, "drop_and_reclaim")
    with cloud.statements() as statements:
        dest = cloud.resizes.schedule(migration.uuid)
    assert dest is not None
    assert not [s for s in statements if s.startswith(_LOCK)], "\n".join(statements)
    assert not [s for s in statements if s.startswith("SELECT max(migration_journal.seq)")]
    assert [(e.seq, e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        (1, "prepare", "applied"),
        (2, "claim", "applied"),
    ]
    cloud.check()


def test_a_second_intent_after_another_write_locks_and_reads(make_cloud: Any) -> None:
    # Another write between the drop and the claim (here an entry of its
    # own) moved the row on: the claim's intent takes the lock's way, reads
    # the seq there and follows it.
    cloud, server, migration = _resize(make_cloud, "drop_and_reclaim")

    def append(selection: Any) -> None:
        _append_behind_the_step(cloud, migration.uuid, touch_row=True)

    cloud.after_scheduling(append)
    with cloud.statements() as statements:
        dest = cloud.resizes.schedule(migration.uuid)
    assert dest is not None
    assert [s for s in statements if s.startswith(_LOCK)], "\n".join(statements)
    assert [(e.seq, e.phase) for e in cloud.db.journal_list(migration.uuid)] == [
        (1, "prepare"),
        (2, "audit"),
        (3, "claim"),
    ]
    assert cloud.db.migration_get(migration.uuid).status == "migrating"
    cloud.check()


def test_a_resize_begun_with_a_context_is_an_action_its_schedule_records_in(
    make_cloud: Any,
) -> None:
    # As the API begins it: the action recorded with the resize, no other call.
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    server = cloud.boot("vm", cloud.flavor("old", **OLD), host="host1")
    context = RequestContext(user_id="u", project_id="p")
    migration = cloud.resizes.begin(
        server.uuid, cloud.flavor("new", **NEW).flavorid, context=context
    )
    assert cloud.resizes.schedule(migration.uuid) is not None
    actions = cloud.db.action_list(server.uuid)
    assert [(a.action, a.request_id) for a in actions] == [(action_api.RESIZE, context.request_id)]
    events = cloud.db.action_events(actions[0].id)
    assert [(e.event, e.result) for e in events] == [("conductor_migrate_server", "Success")]
    cloud.check()
