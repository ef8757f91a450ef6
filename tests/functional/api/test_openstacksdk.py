"""openstacksdk, unchanged, against the API served by waitress on 127.0.0.1."""

from typing import Any

import openstack
import pytest
from openstack import exceptions as sdk_exc

from tests.functional.api.harness import ApiHarness, WaitressThread


def _connect(endpoint: str, token: str = "admin:admin") -> Any:
    return openstack.connect(
        auth_type="admin_token",
        auth={"endpoint": endpoint, "token": token},
        compute_endpoint_override=endpoint,
        load_yaml_config=False,
        load_envvars=False,
    )


def test_sdk_drives_flavors_servers_resize_and_migrations(
    api: ApiHarness, served: WaitressThread
) -> None:
    conn = _connect(served.endpoint)
    small = conn.compute.create_flavor(name="small", ram=512, vcpus=1, disk=1)
    big = conn.compute.create_flavor(name="big", ram=1024, vcpus=2, disk=1)
    assert (small.ram, small.vcpus, small.disk) == (512, 1, 1)
    assert small.extra_specs == {}
    assert {f.name for f in conn.compute.flavors()} == {"small", "big"}

    server = conn.compute.create_server(name="vm", flavor_id=small.id)
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("build_server", {"server_uuid": server.id})
    assert (cast.context.user_id, cast.context.project_id) == ("admin", "admin")

    fetched = conn.compute.get_server(server.id)
    assert fetched.status == "BUILD"
    assert fetched.flavor.original_name == "small"
    assert fetched.flavor.ram == 512
    assert [s.id for s in conn.compute.servers()] == [server.id]

    # The conductor (not running here) would have placed it.
    api.place(server.id)
    assert conn.compute.get_server(server.id).compute_host == "h1"

    conn.compute.resize_server(server, big.id)
    cast = api.next_cast()
    assert cast.method == "resize_server"
    resized = conn.compute.get_server(server.id)
    assert (resized.status, resized.task_state) == ("RESIZE", "resize_prep")

    (migration,) = list(conn.compute.migrations())
    assert migration.uuid == cast.kwargs["migration_uuid"]
    assert migration.server_id == server.id
    assert (migration.status, migration.migration_type) == ("pre-migrating", "resize")
    assert migration.source_compute == "h1"
    # NOTE: as Nova, os-migrations gives the flavors' database ids.
    assert (migration.old_flavor_id, migration.new_flavor_id) == (
        api.db.flavor_get(small.id).id,
        api.db.flavor_get(big.id).id,
    )
    assert migration.user_id == "admin"

    # The conductor and the destination would have finished it.
    api.finish_resize(server.id, migration.uuid, api.db.flavor_get(big.id))
    conn.compute.confirm_server_resize(server)
    cast = api.next_cast()
    assert cast.method == "confirm_resize"
    assert cast.kwargs == {"migration_uuid": migration.uuid}
    assert conn.compute.get_server(server.id).task_state == "resize_confirming"
    (migration,) = list(conn.compute.migrations(status="confirming"))
    assert migration.dest_compute == "h2"

    conn.compute.delete_server(server)
    assert api.next_cast().method == "delete_server"
    assert conn.compute.get_server(server.id).task_state == "deleting"


def test_sdk_reverts_a_resize(api: ApiHarness, served: WaitressThread) -> None:
    small, big = api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)
    server = api.server(small, project_id="project-a", user_id="alice")
    migration = api.verify_resize(server, big)
    conn = _connect(served.endpoint, token="alice:project-a")

    conn.compute.revert_server_resize(conn.compute.get_server(server.uuid))

    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("revert_resize", {"migration_uuid": migration.uuid})
    assert conn.compute.get_server(server.uuid).status == "REVERT_RESIZE"


def test_sdk_sees_errors_as_its_own_exceptions(api: ApiHarness, served: WaitressThread) -> None:
    small, big = api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)
    theirs = api.server(small, project_id="project-b", user_id="bob")
    mine = api.server(small, project_id="project-a", user_id="alice", active=False)
    conn = _connect(served.endpoint, token="alice:project-a")
    before = api.snapshot()

    with pytest.raises(sdk_exc.NotFoundException):
        conn.compute.get_server(theirs.uuid)
    with pytest.raises(sdk_exc.ForbiddenException):
        list(conn.compute.migrations())
    with pytest.raises(sdk_exc.ConflictException):
        conn.compute.resize_server(mine.uuid, big.flavorid)
    with pytest.raises(sdk_exc.BadRequestException):
        conn.compute.create_server(name="vm", flavor_id="no-such-flavor")
    with pytest.raises(sdk_exc.ForbiddenException):
        conn.compute.create_flavor(name="mine", ram=1, vcpus=1, disk=0)

    assert api.snapshot() == before
    api.assert_no_cast()
