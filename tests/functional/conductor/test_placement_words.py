"""What an operator reads when Placement refuses a resize's step, against the real Placement.

A refusal that asking again cannot cure (a resource class Placement does not
know; a source's ``max_unit`` lowered under the old flavor during
VERIFY_RESIZE, then a revert) must say that the step ended and why, in Placement's own
words, with the request readable: never a full URL, a percent-encoded query
or a UUID turned into words inside a path; and never that a sweep will
retry it. A failure that may pass (Placement answering 503 to everything)
says what takes the step on again, and when; and it does.
"""

import uuid
from typing import Any

import pytest

from resize_sched import exception, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import recovery
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.db import action_api
from resize_sched.placement.embedded import PlacementEndpoint
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.database import fresh_sqlite_database
from tests.functional.fixtures.fault_proxy import FaultProxy
from tests.functional.fixtures.flows import Recorder
from tests.functional.fixtures.placement import PlacementHTTP


class _Proxied(PlacementEndpoint):
    """The real Placement behind a fault proxy for the conductor; hosts made directly."""

    def __init__(self, real: PlacementHTTP, proxy: FaultProxy) -> None:
        self.real = real
        self.endpoint = proxy.endpoint

    def add_host(self, *args: Any, **kwargs: Any) -> str:
        return self.real.add_host(*args, **kwargs)


def _event(cloud: Any, server_uuid: str, request_id: str) -> Any:
    action = cloud.db.action_get_by_request_id(server_uuid, request_id)
    (event,) = cloud.db.action_events(action.id)
    return event


def _manager(cloud: Any) -> ConductorManager:
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"words_{uuid.uuid4().hex}")
    manager = ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))
    manager.compute = Recorder()  # type: ignore[assignment]
    return manager


def _readable(said: str) -> None:
    """No address, no encoded query, no mangled path, nothing of Python's."""
    for garble in ("http://", "https://", "%3A", "%2C", "%21", "{'", "b'", "/another provider"):
        assert garble not in said, (garble, said)


def test_a_resize_to_a_resource_class_placement_does_not_know_ends_and_says_so(
    make_cloud: Any,
) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    server = cloud.boot("vm", cloud.flavor("old", 2, 1024, 10), host="host1")
    new = cloud.flavor("new", 2, 1024, 10, extra_specs={"resources:CUSTOM_NOPE": "1"})
    migration = cloud.resizes.begin(server.uuid, new.flavorid)
    cloud.db.action_start(server.uuid, "req-words", action_api.RESIZE, user_id="u", project_id="p")

    _manager(cloud).resize_server(admin_context(), migration.uuid)

    row = cloud.db.migration_get(migration.uuid)
    assert row.status == "error"
    after = cloud.db.server_get(server.uuid)
    assert (after.status, after.host, after.flavor["name"]) == ("ACTIVE", "host1", "old")
    cloud.check()
    event = _event(cloud, server.uuid, "req-words")
    assert (event.event, event.result) == ("conductor_migrate_server", "Error")
    said = event.traceback
    _readable(said)
    assert said.startswith("Placement refused a request while choosing a host for the resize")
    assert "on host host1" in said and "host2" not in said
    assert "No such resource class CUSTOM_NOPE" in said
    assert "GET /allocation_candidates?resources=CUSTOM_NOPE:1," in said
    assert "nothing retries it: the resize ended" in said
    assert "stays on host host1 with its old flavor" in said
    assert "stuck_after" not in said and "Check that Placement is up" not in said


def test_a_revert_refused_under_a_lowered_max_unit_quotes_placement_readably(
    make_cloud: Any,
) -> None:
    # NOTE: a confirm is never refused for inventory (it only empties the
    # migration); a revert onto a source whose max_unit fell below the old
    # flavor is, and says so readably, naming the source.
    cloud = make_cloud("legacy")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    server = cloud.boot("vm", cloud.flavor("old", 2, 1024, 10), host="host1")
    migration, _dest = cloud.resize_to_verify(server, cloud.flavor("new", 4, 1024, 10))
    assert migration.dest_host == "host2"
    rp = cloud.hosts["host1"]
    inventory, generation = cloud.observer.get_inventories(rp)
    records = {rc: dict(record) for rc, record in inventory.items()}
    records["VCPU"]["max_unit"] = 1
    cloud.observer.set_inventory(rp, records, generation=generation)
    cloud.db.action_start(
        server.uuid, "req-revert", action_api.REVERT_RESIZE, user_id="u", project_id="p"
    )

    try:
        cloud.resizes.revert(server.uuid)
    except exception.ClaimRefused as exc:
        assert "would violate inventory constraints" in exc.placement_words
        assert exc.permanent
    else:
        raise AssertionError("the revert was not refused")

    after = cloud.db.server_get(server.uuid)
    assert (after.status, after.host) == ("VERIFY_RESIZE", "host2")
    event = _event(cloud, server.uuid, "req-revert")
    assert (event.event, event.result) == ("conductor_revert_resize", "Error")
    for said in (event.traceback, after.fault_message):
        _readable(said)
        assert "Unable to create allocation for 'VCPU' on host host1." in said
        assert "would violate inventory constraints" in said
        assert rp not in said and "another provider or consumer" not in said
        assert "not enough capacity" not in said and "other servers" not in said


@pytest.mark.parametrize(
    ("strategy", "ended"),
    # max_flavor wrote nothing before the query failed: the resize ends there.
    # drop_and_reclaim had dropped the old flavor: putting it back fails too,
    # and the resize is left in flight for the sweep.
    [("max_flavor", True), ("drop_and_reclaim", False)],
)
def test_a_schedule_placement_cannot_answer_says_what_happens_next_and_it_does(
    tmp_path: Any, strategy: str, ended: bool
) -> None:
    db = fresh_sqlite_database(tmp_path / "db")
    with (
        PlacementHTTP(str(tmp_path / "placement")) as real,
        FaultProxy(real.endpoint) as proxy,
    ):
        cloud = Cloud(_Proxied(real, proxy), db, strategy=strategy)  # type: ignore[arg-type]
        cloud.observer = real.client()
        cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
        cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
        server = cloud.boot("vm", cloud.flavor("old", 2, 1024, 10), host="host1")
        migration = cloud.resizes.begin(server.uuid, cloud.flavor("new", 4, 1024, 10).flavorid)
        cloud.db.action_start(
            server.uuid, "req-down", action_api.RESIZE, user_id="u", project_id="p"
        )
        manager = _manager(cloud)
        proxy.arm({n: "503" for n in range(1, 200)})

        manager.resize_server(admin_context(), migration.uuid)

        assert proxy.injected, "Placement was not asked"
        event = _event(cloud, server.uuid, "req-down")
        said = event.traceback
        _readable(said)
        assert said.startswith(
            "Placement answered HTTP 503 while choosing a host for the resize of the server "
            "on host host1: Service Unavailable (injected by the fault proxy) ("
        ), said
        request = said.split("(injected by the fault proxy) (", 1)[1].split(")", 1)[0]
        assert request in (
            # the query (max_flavor), or the drop before it (drop_and_reclaim)
            "GET /allocation_candidates?resources=DISK_GB:10,MEMORY_MB:1024,VCPU:4&"
            "root_required=CUSTOM_RESIZE_SCHED_DEFAULT,!COMPUTE_STATUS_DISABLED&limit=1000",
            f"PUT /allocations/{migration.uuid}",
            f"PUT /allocations/{server.uuid}",
        ), request
        assert "retry the resize once Placement answers" in said
        assert "[conductor] stuck_after seconds, schedules it again" in said
        assert "Check that Placement is up" in said
        assert "nothing retries" not in said.lower() and "refused" not in said
        status = cloud.db.migration_get(migration.uuid).status
        proxy.arm({})
        if ended:
            assert status == "error"
            after = cloud.db.server_get(server.uuid)
            assert (after.status, after.host, after.flavor["name"]) == ("ACTIVE", "host1", "old")
        else:
            # Left in flight, as it says: the sweep schedules it again.
            assert status == "pre-migrating"
            recovery.recover(manager, idle_for=0)
            assert cloud.db.migration_get(migration.uuid).status != "pre-migrating"
            assert manager.compute.sent("prep_resize")  # type: ignore[attr-defined]
        cloud.check()
    db.dispose()
