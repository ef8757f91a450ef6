"""What an operator reads when Placement refuses a resize's step, against the real Placement.

A refusal that asking again cannot cure (a resource class Placement does not
know; an inventory's ``max_unit`` lowered under the new flavor during
VERIFY_RESIZE) must say that the step ended and why, in Placement's own
words, with the request readable: never a full URL, a percent-encoded query
or a UUID turned into words inside a path; and never that a sweep will
retry it.
"""

import uuid
from typing import Any

from resize_sched import exception, rpc
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor.manager import ConductorManager
from resize_sched.context import admin_context
from resize_sched.db import action_api
from tests.functional.fixtures.flows import Recorder


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


def test_a_confirm_refused_under_a_lowered_max_unit_quotes_placement_readably(
    make_cloud: Any,
) -> None:
    cloud = make_cloud("legacy")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=500)
    cloud.add_host("host2", vcpus=8, memory_mb=16384, disk_gb=500)
    server = cloud.boot("vm", cloud.flavor("old", 2, 1024, 10), host="host1")
    migration, _dest = cloud.resize_to_verify(server, cloud.flavor("new", 4, 1024, 10))
    assert migration.dest_host == "host2"
    rp = cloud.hosts["host2"]
    inventory, generation = cloud.observer.get_inventories(rp)
    records = {rc: dict(record) for rc, record in inventory.items()}
    records["VCPU"]["max_unit"] = 2
    cloud.observer.set_inventory(rp, records, generation=generation)
    cloud.db.action_start(
        server.uuid, "req-confirm", action_api.CONFIRM_RESIZE, user_id="u", project_id="p"
    )

    try:
        cloud.resizes.confirm(server.uuid)
    except exception.ClaimRefused as exc:
        assert "would violate inventory constraints" in exc.placement_words
        assert exc.permanent
    else:
        raise AssertionError("the confirm was not refused")

    after = cloud.db.server_get(server.uuid)
    assert after.status == "VERIFY_RESIZE"
    event = _event(cloud, server.uuid, "req-confirm")
    assert (event.event, event.result) == ("conductor_confirm_resize", "Error")
    for said in (event.traceback, after.fault_message):
        _readable(said)
        assert "Unable to create allocation for 'VCPU' on host host2." in said
        assert "would violate inventory constraints" in said
        assert rp not in said and "another provider or consumer" not in said
        assert "not enough capacity" not in said
