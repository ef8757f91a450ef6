"""The build path under the resize path's rule, on every database backend.

Every build step takes the server by compare-and-swap on its state, a delete
recorded first wins over every later build step, and a stale report changes
nothing on a server that has moved on. Each test here is the regression test
of one bug found under concurrent clients (issue 19); the real Placement runs
in-process, the database is each backend in turn.
"""

import threading
import uuid
from typing import Any

import pytest

from resize_sched import actions, exception, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import audit, recovery
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import RequestContext, admin_context
from resize_sched.db.api import Database
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import PROJECT, USER, Cloud
from tests.functional.fixtures.placement import PlacementInProcess

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


@pytest.fixture
def cloud(placement: PlacementInProcess, db: Database) -> Cloud:
    cloud = Cloud(placement, db, overrides=(("allow_same_host", False, "resize"),))
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud


def _manager(cloud: Cloud) -> ConductorManager:
    # NOTE: a private exchange: nobody listens for the casts to compute hosts.
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"build_{uuid.uuid4().hex}")
    return ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))


def _recorded(cloud: Cloud, flavor: Any, name: str = "vm") -> Any:
    """A server the API recorded (BUILD/scheduling), its build not yet handled."""
    return cloud.builds.create(
        name=name, flavorid=flavor.flavorid, project_id=PROJECT, user_id=USER
    )


def _api_delete(cloud: Cloud, server_uuid: str) -> None:
    """The API's part of a DELETE: recorded with its action, answered 204."""
    ctxt = RequestContext(user_id=USER, project_id=PROJECT, request_id=f"req-{uuid.uuid4()}")
    actions.begin_delete(cloud.db, server_uuid, context=ctxt)


def test_no_valid_host_landing_inside_a_delete_does_not_undo_it(cloud: Cloud) -> None:
    """The build's failure handler runs between the delete's release and its
    compare-and-swap (40 concurrent clients found it): the delete must still
    finish, not leave the server ERROR forever."""
    huge = cloud.flavor("huge", 64, 1024, 10)
    server = _recorded(cloud, huge)
    manager = _manager(cloud)
    released, build_done = threading.Event(), threading.Event()
    real_delete = cloud.db.server_delete
    errors: list[BaseException] = []

    def server_delete(uuid_: str, **kwargs: Any) -> None:
        released.set()
        assert build_done.wait(60), "the build never finished"
        real_delete(uuid_, **kwargs)

    def delete_cast() -> None:
        try:
            manager.delete_server(admin_context(), server.uuid)
        except BaseException as exc:  # reported below
            errors.append(exc)

    deleter = threading.Thread(target=delete_cast)

    def delete_during_scheduling() -> None:
        _api_delete(cloud, server.uuid)
        deleter.start()
        assert released.wait(60), "the delete never released"

    cloud.db.server_delete = server_delete  # type: ignore[method-assign]
    cloud.before_scheduling(delete_during_scheduling)
    manager.build_server(admin_context(), server.uuid)
    build_done.set()
    deleter.join(60)
    assert not deleter.is_alive() and errors == []
    row = cloud.db.server_get(server.uuid, read_deleted=True)
    assert (row.status, row.deleted_at is not None) == ("DELETED", True), (
        f"the delete was lost: {row.status}/{row.task_state}"
    )
    assert cloud.db.server_list_delete_unfinished() == []
    cloud.check()


def test_an_accepted_delete_is_finished_whatever_state_the_server_was_left_in(
    cloud: Cloud,
) -> None:
    """The sweep's safety net: a delete the API accepted is carried out even
    when a writer cleared ``deleting`` afterwards (as the build's failure
    handler did), here an ERROR server with no task."""
    flavor = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    server = cloud.boot("vm", flavor)
    _api_delete(cloud, server.uuid)
    # A writer that did not compare-and-swap (the old failure handler).
    cloud.db.server_update(server.uuid, status="ERROR", vm_state="error", task_state=None)
    report = recovery.recover(_manager(cloud))
    assert report.resumed == {server.uuid: "delete completed"}
    assert cloud.db.server_get(server.uuid, read_deleted=True).status == "DELETED"
    assert cloud.holds(server.uuid) == {}
    assert recovery.recover(_manager(cloud)).found == 0
    cloud.check()


def test_a_stale_decision_failure_changes_nothing_on_a_server_that_moved_on(
    cloud: Cloud,
) -> None:
    """A host's failure report of a confirm (or a revert) delivered late, after
    the server was resized again: no fault on the healthy server. The same
    kind of report while its resize is the server's latest is recorded."""
    f_old = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    f_new = cloud.flavor("new", **dict(zip(("vcpus", "memory_mb", "disk_gb"), NEW.values())))
    server = cloud.boot("vm", f_old)
    manager = _manager(cloud)
    first, _ = cloud.resize_to_verify(server, f_new)
    cloud.confirm(server)
    second, _ = cloud.resize_to_verify(server, f_old)
    cloud.revert(server)
    first, second = (cloud.db.migration_get(m.uuid) for m in (first, second))

    def report(migration: Any, operation: str, host: str) -> None:
        manager.operation_failed(
            admin_context(),
            operation,
            "late report",
            server_uuid=server.uuid,
            migration_uuid=migration.uuid,
            host=host,
        )

    # The first resize's confirm failing on its source, reported late.
    report(first, "confirm", first.source_host)
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.fault_message) == ("ACTIVE", None, None)
    # A revert report for a resize that was confirmed; a confirm report for
    # one that was reverted: not due either.
    report(first, "revert", first.dest_host)
    report(second, "confirm", second.source_host)
    assert cloud.db.server_get(server.uuid).fault_message is None
    # Due: the server's latest resize, reverted, from its destination.
    report(second, "revert", second.dest_host)
    fault = cloud.db.server_get(server.uuid).fault_message
    assert fault.startswith(
        f"Reverting the resize: stopping the server on host {second.dest_host}"
    )
    assert "late report" in fault
    cloud.check()


class _HeldClaim:
    """The build's claim of ``consumer`` is held up in a slow Placement: the
    client times out (Placement unavailable, outcome unknown) while the
    request waits in Placement's queue; :meth:`land` lets it through, late."""

    def __init__(self, cloud: Cloud, consumer: str) -> None:
        self.real = cloud.client.put_allocations
        self.held: list[tuple[str, Any]] = []

        def put(uuid_: str, write: Any) -> Any:
            if uuid_ == consumer and not self.held:
                self.held.append((uuid_, write))
                cloud.client.put_allocations = self.real  # type: ignore[method-assign]
                raise exception.PlacementUnavailable(
                    method="PUT", url=f"/allocations/{uuid_}", reason="read timed out"
                )
            return self.real(uuid_, write)

        cloud.client.put_allocations = put  # type: ignore[method-assign]

    def land(self) -> None:
        ((consumer, write),) = self.held
        self.real(consumer, write)


def _orphans(cloud: Cloud) -> list[str]:
    report = audit.audit(cloud.db, cloud.observer, owner_trait=DEFAULT_OWNER_TRAIT)
    return [o.line() for o in report.orphans]


def test_a_claim_landing_after_the_delete_is_reaped_by_the_sweep(cloud: Cloud) -> None:
    """A build's claim held in flight reaches Placement after the delete
    released everything, and is accepted (a consumer with no generation is
    created again): the sweep's reaper finds it and gives it back, journaled,
    and audit finds nothing left."""
    flavor = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    server = _recorded(cloud, flavor)
    bystander = cloud.boot("bystander", flavor)
    manager = _manager(cloud)
    held = _HeldClaim(cloud, server.uuid)
    manager.build_server(admin_context(), server.uuid)  # left for the sweep
    _api_delete(cloud, server.uuid)
    manager.delete_server(admin_context(), server.uuid)
    assert cloud.holds(server.uuid) == {}
    held.land()
    assert cloud.holds(server.uuid) != {}, "the late claim was refused: nothing to reap"
    assert len(_orphans(cloud)) == 1

    cloud.conf.set_override("reap_after", 0, group="conductor")
    report = recovery.recover(manager, idle_for=0)
    assert report.failed == {}
    assert cloud.holds(server.uuid) == {}
    assert _orphans(cloud) == []
    assert cloud.holds(bystander.uuid) == cloud.on(bystander.host, OLD)
    # Journaled like any transition: the claim (settled abandoned by the
    # delete's read, before it landed), then the reap of exactly what it claimed.
    journal = cloud.db.server_journal_list(server.uuid)
    assert [(e.phase, e.state) for e in journal] == [
        ("claim", "abandoned"),
        ("reap", "applied"),
    ]
    assert journal[-1].before == journal[0].target and journal[-1].target == {}
    cloud.check()


def test_the_reaper_waits_for_the_grace_period_and_touches_only_ours(cloud: Cloud) -> None:
    """Within ``reap_after`` a late claim is left (writes may still be in
    flight); a consumer that is not ours is never touched."""
    from resize_sched.conductor import reaper

    flavor = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    server = _recorded(cloud, flavor)
    manager = _manager(cloud)
    held = _HeldClaim(cloud, server.uuid)
    manager.build_server(admin_context(), server.uuid)
    _api_delete(cloud, server.uuid)
    manager.delete_server(admin_context(), server.uuid)
    held.land()
    squatter = cloud.squat("host2", VCPU=1)
    report = reaper.reap(manager, grace=3600)
    assert report.reaped == {} and "grace" in report.left[server.uuid]
    report = reaper.reap(manager, grace=0)
    assert report.reaped == {server.uuid: "deleted server"}
    assert squatter not in report.reaped and squatter not in report.left
    assert cloud.holds(squatter) == {cloud.hosts["host2"]: {"VCPU": 1}}
    assert cloud.holds(server.uuid) == {}
    # Nothing left for the next pass.
    assert reaper.reap(manager, grace=0).reaped == {}
    cloud.check()


def test_a_late_write_to_a_closed_migration_is_reaped_journaled_on_it(cloud: Cloud) -> None:
    """A write for a resize's migration consumer that lands after the resize
    was confirmed (sent before, held up): the reaper gives back what the
    migration holds on our providers, journaled on the migration, and leaves
    the live server's consumer as it is."""
    from resize_sched.conductor import reaper
    from resize_sched.placement.client import MIGRATION, ConsumerWrite

    f_old = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    f_new = cloud.flavor("new", **dict(zip(("vcpus", "memory_mb", "disk_gb"), NEW.values())))
    server = cloud.boot("vm", f_old)
    migration, _ = cloud.resize_to_verify(server, f_new)
    cloud.confirm(server)
    held = cloud.holds(server.uuid)
    late = ConsumerWrite(cloud.on("host1", OLD), PROJECT, USER, None, MIGRATION)
    cloud.observer.put_allocations(migration.uuid, late)
    assert len(_orphans(cloud)) == 1
    report = reaper.reap(_manager(cloud), grace=0)
    assert report.reaped == {migration.uuid: "migration confirmed"}
    assert cloud.holds(migration.uuid) == {}
    assert cloud.holds(server.uuid) == held
    assert _orphans(cloud) == []
    last = cloud.db.journal_list(migration.uuid)[-1]
    assert (last.phase, last.state) == ("reap", "applied")
    cloud.check()


def test_no_claim_is_sent_once_a_delete_is_recorded(cloud: Cloud) -> None:
    """A delete recorded between the scheduler's answer and the claim wins:
    the claim's intent is refused under the server's lock, so nothing is
    written to Placement for it, and the build step is a logged no-op."""
    flavor = cloud.flavor("old", **dict(zip(("vcpus", "memory_mb", "disk_gb"), OLD.values())))
    server = _recorded(cloud, flavor)
    manager = _manager(cloud)
    writes: list[str] = []
    real = cloud.client.put_allocations

    def put(uuid_: str, write: Any) -> Any:
        writes.append(uuid_)
        return real(uuid_, write)

    cloud.client.put_allocations = put  # type: ignore[method-assign]
    cloud.after_scheduling(lambda selection: _api_delete(cloud, server.uuid))
    manager.build_server(admin_context(), server.uuid)
    assert writes == []
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.host) == ("BUILD", "deleting", None)
    manager.delete_server(admin_context(), server.uuid)
    assert cloud.db.server_get(server.uuid, read_deleted=True).status == "DELETED"
    assert cloud.holds(server.uuid) == {}
    cloud.check()
