"""Overlapping operations: a delete always wins, nothing leaks, no step runs twice.

The matrix plays each resize flow (confirm, revert, a rescheduled prep
failure) for every strategy, on the same host and to another, through the
conductor's RPC endpoints against the real Placement. A delete is injected
at every step boundary (see :mod:`tests.functional.fixtures.flows`), and
every message is delivered twice and late. After each run Placement must hold
exactly what the remaining servers' flavors add up to.
"""

from typing import Any

import pytest

from resize_sched import actions, exception
from resize_sched import resources as rs
from resize_sched.conductor import heal
from resize_sched.context import admin_context
from resize_sched.placement.client import ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.fixtures.flows import FLOWS, NEW, OLD, PLACES, STRATEGIES, fresh_run

MATRIX = [(s, p, f) for s in STRATEGIES for p in PLACES for f in FLOWS]
#: Every cell is slow (13-17 boundaries, each a fresh cloud): ``tox -e faults``
#: runs them all; the quick suite runs the regression tests below.
CELLS = [pytest.param(case, id="-".join(case), marks=pytest.mark.slow) for case in MATRIX]


def _points(strategy, place, flow):
    """How many boundaries the flow has when nothing interferes."""
    with fresh_run(strategy, place, flow) as run:
        for _, deliver in run.messages():
            run.boundaries.point("before a message")
            deliver()
        return run.boundaries.count, list(run.boundaries.labels)


@pytest.mark.parametrize("case", CELLS)
def test_delete_at_every_boundary_wins(case):
    """A delete, carried out whole at point k, for every k of the flow."""
    total, labels = _points(*case)
    assert total >= len(labels) > 5
    fired = []
    for k in range(1, total + 1):
        with fresh_run(*case) as run:
            run.boundaries.at = k
            run.boundaries.action = run.delete_now
            for _, deliver in run.messages():
                run.boundaries.point("before a message")
                deliver()
            assert run.boundaries.fired is not None, f"point {k} never reached"
            fired.append(run.boundaries.fired)
            try:
                run.assert_deleted_without_leaks()
            except AssertionError as exc:
                where = f"delete at point {k} ({run.boundaries.fired})"
                raise AssertionError(f"{where}: {exc}") from exc
    assert len(fired) == total


@pytest.mark.parametrize("case", CELLS)
def test_delete_recorded_at_every_boundary_then_carried_out_late(case):
    """The API records the delete at point k; its cast arrives after every other step."""
    total, _ = _points(*case)
    for k in range(1, total + 1):
        with fresh_run(*case) as run:
            run.boundaries.at = k
            run.boundaries.action = run.record_delete
            for _, deliver in run.messages():
                run.boundaries.point("before a message")
                deliver()
            run.manager.delete_server(admin_context(), run.server.uuid)
            try:
                run.assert_deleted_without_leaks()
            except AssertionError as exc:
                where = f"delete at point {k} ({run.boundaries.fired})"
                raise AssertionError(f"{where}: {exc}") from exc


def _final_state(run):
    """What the run ended with, by host name (uuids differ between runs)."""
    server = run.cloud.db.server_get(run.server.uuid)
    migration = run.cloud.db.migration_get(run.migration_uuid)
    names = {rp: name for name, rp in run.cloud.hosts.items()}

    def holds(consumer):
        return {names[rp]: amounts for rp, amounts in run.cloud.holds(consumer).items()}

    return (
        server.status,
        server.task_state,
        server.host,
        server.flavor["name"],
        migration.status,
        holds(run.server.uuid),
        holds(migration.uuid),
        len(run.compute.sent("prep_resize")),
        len(run.compute.sent("resize_instance")),
    )


def _assert_settled(run, flow):
    final = OLD if flow == "revert" else NEW
    server = run.cloud.db.server_get(run.server.uuid)
    assert (server.status, server.task_state) == ("ACTIVE", None)
    assert run.cloud.holds(run.server.uuid) == rs.on(server.rp_uuid, final)
    assert run.cloud.holds(run.migration_uuid) == {}
    assert (
        server.placement_generation == run.cloud.observer.get_allocations(server.uuid).generation
    )
    run.assert_usage_matches_live_servers()
    run.cloud.check()


@pytest.mark.parametrize("case", CELLS)
def test_every_message_twice_or_late_changes_nothing(case):
    """Each conductor message delivered again at once, and again after the next one."""
    strategy, place, flow = case
    with fresh_run(*case) as run:
        for _, deliver in run.messages():
            deliver()
        baseline = _final_state(run)
        _assert_settled(run, flow)
    count = len(run.messages())
    for i in range(count):
        for late in (False, True):
            with fresh_run(*case) as run:
                steps = run.messages()
                for j, (name, deliver) in enumerate(steps):
                    deliver()
                    if j == i and not late and not name.startswith("API"):
                        deliver()
                    if late and j == i + 1 and not steps[i][0].startswith("API"):
                        steps[i][1]()
                if late and i == count - 1 and not steps[i][0].startswith("API"):
                    steps[i][1]()
                label = f"{steps[i][0]} {'late' if late else 'twice'}"
                assert _final_state(run) == baseline, label
                _assert_settled(run, flow)


# -- the seven cases of the issue, one regression test each ----------------------------


def test_delete_between_query_and_claim_leaves_nothing():
    """Case 1: the claim must not land (or must be given back) after a delete."""
    for strategy in STRATEGIES:
        with fresh_run(strategy, "other", "confirm") as run:
            steps = run.messages()
            steps[0][1]()
            run.cloud.after_scheduling(lambda selection: run.delete_now())
            steps[1][1]()
            assert run.cloud.db.migration_get(run.migration_uuid).status == "error"
            assert run.compute.sent("prep_resize") == []
            run.assert_deleted_without_leaks()


@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_delete_racing_a_decision_is_not_lost(decision):
    """Case 2: the decision step must not clear ``deleting`` after the delete's release."""
    with fresh_run("max_flavor", "other", decision) as run:
        steps = run.messages()
        for _, deliver in steps[:-1]:
            deliver()
        real = run.cloud.db.migration_advance

        def advance(*args, **kwargs):
            run.delete_now()
            return real(*args, **kwargs)

        run.cloud.db.migration_advance = advance
        steps[-1][1]()
        run.cloud.db.migration_advance = real
        run.assert_deleted_without_leaks()


def test_revert_handled_after_the_delete_recreates_nothing():
    """Case 3 (Nova bug 1848343): a revert cast that arrives after the delete is a no-op."""
    with fresh_run("legacy", "other", "revert") as run:
        steps = run.messages()
        for _, deliver in steps[:-1]:
            deliver()
        run.delete_now()
        steps[-1][1]()
        assert run.compute.sent("revert_resize") == []
        run.assert_deleted_without_leaks()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_prep_failure_on_the_source_with_prefer_same_host_asks_other_hosts(strategy):
    """Case 4: the reschedule asks the other hosts, it does not give up."""
    with fresh_run(strategy, "same", "reschedule") as run:
        steps = run.messages()
        steps[0][1]()
        steps[1][1]()
        assert run.compute.sent("prep_resize")[0][1] == "host1"
        steps[2][1]()
        migration = run.cloud.db.migration_get(run.migration_uuid)
        assert (migration.status, migration.dest_host) == ("migrating", "host2")
        assert run.compute.sent("prep_resize")[-1][1] == "host2"
        for _, deliver in steps[3:]:
            deliver()
        _assert_settled(run, "confirm")
        assert run.cloud.db.server_get(run.server.uuid).host == "host2"


@pytest.mark.parametrize("place", PLACES)
def test_foreign_write_to_the_server_is_left_by_confirm_and_healed(place):
    """Case 5: someone adds 1 VCPU to the server's allocation in VERIFY_RESIZE.

    A confirm writes only the migration consumer: writing the server again
    could be refused for what it already holds (Placement checks every
    amount written against today's inventory). So the confirm neither sees
    nor undoes that write; heal does, once the server is ACTIVE with more
    than its flavor.
    """
    with fresh_run("max_flavor", place, "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:-2]:
            deliver()
        held = run.cloud.observer.get_allocations(run.server.uuid)
        tampered = {
            rp: {**amounts, "VCPU": amounts.get("VCPU", 0) + 1}
            for rp, amounts in held.allocations.items()
        }
        run.cloud.observer.put_allocations(
            run.server.uuid, ConsumerWrite(tampered, "project-a", "user-a", held.generation)
        )
        for _, deliver in steps[-2:]:
            deliver()
        server = run.cloud.db.server_get(run.server.uuid)
        assert (server.status, server.task_state) == ("ACTIVE", None)
        assert run.cloud.holds(run.server.uuid) == tampered
        assert run.cloud.holds(run.migration_uuid) == {}
        report = heal.heal(run.cloud.db, run.cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
        assert [r.outcome for r in report.results] == [heal.HEALED], report
        _assert_settled(run, "confirm")
        assert (
            rs.flavor_request(run.cloud.db.server_get(run.server.uuid).flavor).resources["VCPU"]
            == NEW["VCPU"]
        )


def test_duplicate_resize_server_while_the_first_runs_is_a_no_op():
    """Case 6: a second resize_server delivered while the first is mid-claim.

    The schedule takes the migration with its claim's intent: the second
    delivery, which runs whole between the first's query and its claim,
    claims, and the first finds the migration taken at its intent and
    stops there, having written nothing.
    """
    with fresh_run("max_flavor", "other", "confirm") as run:
        steps = run.messages()
        steps[0][1]()
        delivered: list[bool] = []

        def second_delivery(selection: Any) -> None:
            if not delivered:  # the second delivery's own query comes back here
                delivered.append(True)
                steps[1][1]()

        run.cloud.after_scheduling(second_delivery)
        steps[1][1]()
        assert delivered
        assert len(run.compute.sent("prep_resize")) == 1
        entries = run.cloud.db.journal_list(run.migration_uuid)
        assert [e.phase for e in entries if e.state == "applied"] == ["claim"]
        for _, deliver in steps[2:]:
            deliver()
        _assert_settled(run, "confirm")


def test_stale_messages_are_refused_before_any_write():
    """Issue 9's replays: a revert after a confirm, a confirm never accepted by the API."""
    with fresh_run("max_flavor", "other", "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:4]:
            deliver()
        before = run.cloud.client.request_count
        # Not accepted by the API: the migration is still 'finished'.
        run.manager.confirm_resize(admin_context(), run.migration_uuid)
        assert run.cloud.db.migration_get(run.migration_uuid).status == "finished"
        for _, deliver in steps[4:]:
            deliver()
        run.manager.revert_resize(admin_context(), run.migration_uuid)
        run.manager.resize_server(admin_context(), run.migration_uuid)
        assert run.cloud.db.migration_get(run.migration_uuid).status == "confirmed"
        assert run.compute.sent("revert_resize") == []
        # Only the confirm itself wrote.
        assert run.cloud.client.request_count - before == 1
        _assert_settled(run, "confirm")


def test_reports_from_a_host_the_resize_left_change_nothing():
    """A prep failure (or prepared report) from the first destination, after the
    reschedule moved on, neither reschedules again nor starts the resize there."""
    with fresh_run("max_flavor", "other", "reschedule") as run:
        steps = run.messages()
        for _, deliver in steps[:3]:
            deliver()
        first = run.compute.sent("prep_resize")[0][1]
        now = run.cloud.db.migration_get(run.migration_uuid).dest_host
        assert first != now
        for stale in ("resize_prepared", "operation_failed"):
            if stale == "resize_prepared":
                run.manager.resize_prepared(admin_context(), run.migration_uuid, host=first)
            else:
                run.manager.operation_failed(
                    admin_context(),
                    "prep_resize",
                    "late",
                    server_uuid=run.server.uuid,
                    migration_uuid=run.migration_uuid,
                    host=first,
                )
            again = run.cloud.db.migration_get(run.migration_uuid)
            assert (again.status, again.dest_host) == ("migrating", now)
        assert run.compute.sent("resize_instance") == []
        for _, deliver in steps[3:]:
            deliver()
        _assert_settled(run, "confirm")


def test_delete_twice_is_harmless():
    with fresh_run("legacy", "other", "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:4]:
            deliver()
        run.delete_now()
        run.manager.delete_server(admin_context(), run.server.uuid)
        with pytest.raises(exception.ServerNotFound):
            actions.begin_delete(run.cloud.db, run.server.uuid)
        run.assert_deleted_without_leaks()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_new_flavor_over_the_sources_max_unit_is_infeasible(make_cloud, strategy):
    """Case 7: max_flavor's increase-only query passes, the claim cannot: that
    is infeasible (no retry can ever succeed), not deferred."""
    cloud = make_cloud(strategy)
    cloud.hosts["host1"] = cloud._placement.add_host(
        "host1", vcpus={"total": 8, "max_unit": 2}, memory_mb=16384, disk_gb=500
    )
    f_old = cloud.flavor("old", 2, 1024, 10)
    f_new = cloud.flavor("new", 3, 1024, 10)
    server = cloud.boot("vm", f_old)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "infeasible")
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on(
        "host1", {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
    )
    row = cloud.db.migration_get(migration.uuid)
    assert (row.status, row.error_kind) == ("error", "infeasible")
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


def test_malformed_messages_are_dropped_before_any_read_or_write():
    """A list where a uuid belongs, an unknown argument: dropped, nothing changes."""
    with fresh_run("max_flavor", "other", "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:2]:
            deliver()
        before = _final_state(run)
        requests = run.cloud.client.request_count
        ctxt = admin_context()
        run.manager.resize_server(ctxt, [run.migration_uuid])
        run.manager.resize_finished(ctxt, migration_uuid={"uuid": run.migration_uuid})
        run.manager.delete_server(ctxt, server_uuid="' OR 1=1 --")
        run.manager.confirm_resize(ctxt, run.migration_uuid, surprise=True)
        run.manager.operation_failed(ctxt, "prep_resize", 42, run.server.uuid, run.migration_uuid)
        assert run.cloud.client.request_count == requests
        assert _final_state(run) == before
        assert run.cloud.db.server_get(run.server.uuid).task_state != "deleting"


def test_a_delete_whose_cast_was_lost_is_finished_by_recovery():
    from resize_sched.conductor import recovery

    with fresh_run("legacy", "other", "confirm") as run:
        steps = run.messages()
        for _, deliver in steps[:4]:
            deliver()
        run.record_delete()  # the API's part; its cast never arrives
        report = recovery.recover(run.manager)
        assert report.resumed[run.server.uuid] == "delete completed"
        assert report.failed == {}
        run.assert_deleted_without_leaks()
        # Nothing left for the next start.
        assert recovery.recover(run.manager).found == 0


def test_a_write_landing_after_the_delete_is_given_back():
    """The give-back after a delete, in the quick suite: the delete runs whole
    once a write is journaled but before it is sent, so the write lands after
    the delete released everything (``drop_and_reclaim``'s claim creates both
    consumers, with no generation to refuse it). The step's compare-and-swap
    then fails, and the step gives back what its write left. (The other
    strategies' writes carry a generation there, and are refused: the slow
    matrix above covers them.)"""
    strategy = "drop_and_reclaim"
    _, labels = _points(strategy, "other", "confirm")
    points = [k for k, label in enumerate(labels, 1) if label.endswith("not yet written")]
    assert points
    for k in points:
        with fresh_run(strategy, "other", "confirm") as run:
            run.boundaries.at = k
            run.boundaries.action = run.delete_now
            for _, deliver in run.messages():
                run.boundaries.point("before a message")
                deliver()
            try:
                run.assert_deleted_without_leaks()
            except AssertionError as exc:
                raise AssertionError(f"delete at point {k} ({labels[k - 1]}): {exc}") from exc
