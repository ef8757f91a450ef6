"""python-novaclient, unchanged, against the API served by waitress on 127.0.0.1.

novaclient is the other client operators script against; it negotiates a
microversion itself and has its own models and exceptions, so it exercises
response shapes openstacksdk forgives.
"""

from typing import Any

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from novaclient import client as nova_client
from novaclient import exceptions as nova_exc

from tests.functional.api.harness import ApiHarness, WaitressThread

MICROVERSION = "2.80"


def _nova(endpoint: str, token: str = "admin:admin") -> Any:
    session = ks_session.Session(auth=token_endpoint.Token(endpoint, token))
    return nova_client.Client(MICROVERSION, session=session, endpoint_override=endpoint)


def test_novaclient_drives_flavors_servers_resize_and_migrations(
    api: ApiHarness, served: WaitressThread
) -> None:
    nova = _nova(served.endpoint)
    small = nova.flavors.create("small", ram=512, vcpus=1, disk=1, flavorid="small")
    big = nova.flavors.create("big", ram=1024, vcpus=2, disk=1, flavorid="big")
    assert (small.ram, small.vcpus, small.disk) == (512, 1, 1)
    assert small.get_keys() == {}
    big.set_keys({"trait:HW_CPU_X86_AVX2": "required"})
    assert big.get_keys() == {"trait:HW_CPU_X86_AVX2": "required"}
    big.unset_keys(["trait:HW_CPU_X86_AVX2"])
    assert api.db.flavor_get("big").extra_specs == {}
    assert {f.name for f in nova.flavors.list()} == {"small", "big"}

    server = nova.servers.create("vm", image=None, flavor=small.id, nics="none")
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("build_server", {"server_uuid": server.id})
    fetched = nova.servers.get(server.id)
    assert fetched.status == "BUILD"
    assert fetched.flavor["original_name"] == "small"
    assert [s.id for s in nova.servers.list()] == [server.id]

    # The conductor (not running here) would have placed it.
    api.place(server.id)
    assert getattr(nova.servers.get(server.id), "OS-EXT-SRV-ATTR:host") == "h1"

    nova.servers.resize(server.id, big.id)
    cast = api.next_cast()
    assert cast.method == "resize_server"
    assert nova.servers.get(server.id).status == "RESIZE"
    (migration,) = nova.migrations.list()
    assert migration.uuid == cast.kwargs["migration_uuid"]
    assert (migration.status, migration.migration_type) == ("pre-migrating", "resize")
    assert (migration.source_compute, migration.instance_uuid) == ("h1", server.id)

    api.finish_resize(server.id, migration.uuid, api.db.flavor_get(big.id))
    nova.servers.confirm_resize(server.id)
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("confirm_resize", {"migration_uuid": migration.uuid})
    assert [m.status for m in nova.migrations.list(status="confirming")] == ["confirming"]

    nova.servers.delete(server.id)
    assert api.next_cast().method == "delete_server"
    assert getattr(nova.servers.get(server.id), "OS-EXT-STS:task_state") == "deleting"


def test_novaclient_reverts_a_resize(api: ApiHarness, served: WaitressThread) -> None:
    small, big = api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)
    server = api.server(small, project_id="project-a", user_id="alice")
    migration = api.verify_resize(server, big)
    nova = _nova(served.endpoint, token="alice:project-a")

    nova.servers.revert_resize(server.uuid)

    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("revert_resize", {"migration_uuid": migration.uuid})
    assert nova.servers.get(server.uuid).status == "REVERT_RESIZE"


def test_novaclient_sees_errors_as_its_own_exceptions(
    api: ApiHarness, served: WaitressThread
) -> None:
    small, big = api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)
    theirs = api.server(small, project_id="project-b", user_id="bob")
    mine = api.server(small, project_id="project-a", user_id="alice", active=False)
    nova = _nova(served.endpoint, token="alice:project-a")
    before = api.snapshot()

    with pytest.raises(nova_exc.NotFound):
        nova.servers.get(theirs.uuid)
    with pytest.raises(nova_exc.Forbidden):
        nova.migrations.list()
    with pytest.raises(nova_exc.Conflict) as conflict:
        nova.servers.resize(mine.uuid, big.flavorid)
    assert "BUILD" in str(conflict.value)
    with pytest.raises(nova_exc.BadRequest):
        nova.servers.create("vm", image=None, flavor="no-such-flavor", nics="none")
    with pytest.raises(nova_exc.Forbidden):
        nova.flavors.create("mine", ram=1, vcpus=1, disk=0)

    assert api.snapshot() == before
    api.assert_no_cast()
