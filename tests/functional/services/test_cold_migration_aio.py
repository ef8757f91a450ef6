"""A cold migration through the deployed services (the all-in-one in-process):
openstacksdk asks the API, the conductor and the fake compute hosts run the
steps over oslo.messaging, and Placement's state is asserted after each.
"""

import contextlib
import random
import threading
import time
from typing import Any

import openstack.exceptions

from resize_sched.db import models

FLAVOR = {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}


def _action(d: Any, server: Any, body: Any, version: str = "2.56") -> Any:
    return d.conn.compute.post(f"/servers/{server.id}/action", json=body, microversion=version)


def test_cold_migration_confirmed_then_reverted(deploy):
    d = deploy()
    flavor = d.flavor("small", vcpus=2, ram=1024, disk=10)
    server = d.boot("vm", flavor)
    source = server.compute_host
    other = "host2" if source == "host1" else "host1"

    # -- migrate, the scheduler chooses: the only other host ----------------------------
    d.conn.compute.migrate_server(server)
    server = d.wait(server, "VERIFY_RESIZE")
    d.check()
    assert server.compute_host == other
    migration = d.migration(server)
    assert (migration.migration_type, migration.status) == ("migration", "finished")
    assert (migration.source_compute, migration.dest_compute) == (source, other)
    assert d.holds(server.id) == d.on(other, **FLAVOR)
    consumer = d.aio.db.migration_get_by_id(int(migration.id)).uuid
    assert d.holds(consumer) == d.on(source, **FLAVOR)

    d.conn.compute.confirm_server_resize(server)
    server = d.wait(server, "ACTIVE")
    d.check()
    assert d.holds(server.id) == d.on(other, **FLAVOR)
    assert d.holds(consumer) == {}
    assert d.usage(source) == {}

    # -- back to the named host (2.56), then reverted: it stays where it was --------------
    assert _action(d, server, {"migrate": {"host": source}}).status_code == 202
    server = d.wait(server, "VERIFY_RESIZE")
    assert server.compute_host == source
    d.conn.compute.revert_server_resize(server)
    server = d.wait(server, "ACTIVE")
    d.check()
    assert server.compute_host == other
    assert d.holds(server.id) == d.on(other, **FLAVOR)
    assert d.usage(source) == {}

    # -- what os-instance-actions shows: Nova's action and events ------------------------
    actions = list(d.conn.compute.server_actions(server))
    assert [a.action for a in actions][:4] == [
        "revertResize",
        "migrate",
        "confirmResize",
        "migrate",
    ]
    shown = d.conn.compute.get_server_action(actions[3].request_id, server)
    events = {e["event"]: e["result"] for e in shown.events}
    assert events == {
        "conductor_migrate_server": "Success",
        "compute_prep_resize": "Success",
        "compute_resize_instance": "Success",
        "compute_finish_resize": "Success",
    }

    # -- a disabled host is refused (400) and nothing changes ----------------------------
    d.aio.db.service_set_disabled(d.aio.db.service_get_by_host(source).uuid, True, "drain")
    response = _action(d, server, {"migrate": {"host": source}})
    assert response.status_code == 400 and "disabled (drain)" in response.text
    assert d.conn.compute.get_server(server.id).status == "ACTIVE"
    d.check()


def test_delete_racing_a_migration_always_wins(deploy):
    """A client migrates (or confirms, or reverts) while another deletes the
    same server a few milliseconds later: the delete wins every round, and
    Placement holds exactly what the surviving server's flavor holds."""
    d = deploy("[conductor]\nstuck_check_interval = 0\n")
    flavor = d.flavor("small", vcpus=2, ram=1024, disk=10)
    bystander = d.boot("bystander", flavor)
    rng = random.Random("cold-migration")
    deleted = []
    for action in ("migrate", "migrate", "confirm", "revert"):
        server = d.boot("vm", flavor)
        if action != "migrate":
            d.conn.compute.migrate_server(server)
            server = d.wait(server, "VERIFY_RESIZE")
        call = {
            "migrate": d.conn.compute.migrate_server,
            "confirm": d.conn.compute.confirm_server_resize,
            "revert": d.conn.compute.revert_server_resize,
        }[action]

        def act(call=call, server=server):
            # NOTE: 409 or 404 is a fair answer once the delete is in.
            with contextlib.suppress(
                openstack.exceptions.ConflictException, openstack.exceptions.NotFoundException
            ):
                call(server)

        thread = threading.Thread(target=act)
        thread.start()
        time.sleep(rng.uniform(0, 0.03))
        d.conn.compute.delete_server(server)
        thread.join()
        d.conn.compute.wait_for_delete(server, wait=30, interval=0.05)
        deleted.append(server.id)
    deadline = time.monotonic() + 30
    while d.aio.db.migration_list(statuses=models.IN_FLIGHT_STATUSES):
        assert time.monotonic() < deadline, "a migration stayed in flight"
        time.sleep(0.05)
    for server_id in deleted:
        assert d.holds(server_id) == {}
        for migration in d.aio.db.migration_list(server_uuid=server_id):
            assert d.holds(migration.uuid) == {}, migration
    host = d.conn.compute.get_server(bystander.id).compute_host
    assert [name for name in d.hosts if d.usage(name)] == [host]
    assert d.usage(host) == FLAVOR
    d.check()
