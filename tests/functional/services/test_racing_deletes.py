"""DELETE racing each action through the API, with real concurrency.

The all-in-one runs the API, the conductor (a thread pool) and the compute
hosts in one process; a client thread sends an action (resize, confirm,
revert) while another sends DELETE a few milliseconds later, many rounds.
Every delete must win: the server ends deleted, and Placement holds exactly
what the surviving servers' flavors add up to. Slow: ``tox -e faults``.
"""

import random
import threading
import time

import openstack.exceptions
import pytest

from resize_sched import resources as rs

pytestmark = pytest.mark.slow

OLD = dict(vcpus=1, ram=1024, disk=10)
NEW = dict(vcpus=2, ram=2048, disk=20)
ROUNDS = 4


def _gone(d, server_id, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            d.conn.compute.get_server(server_id)
        except openstack.exceptions.NotFoundException:
            return True
        time.sleep(0.05)
    return False


def _quiet(d, timeout=30.0):
    """Wait until no migration is in flight and no server is being deleted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = d.aio.db.migration_list(
            statuses=("pre-migrating", "migrating", "confirming", "reverting")
        ) or d.aio.db.server_list(task_state="deleting")
        if not busy:
            return
        time.sleep(0.05)
    raise AssertionError(f"still busy: {busy}")


def _usage_matches_live_servers(d):
    expected = {}
    for server in d.aio.db.server_list():
        if server.rp_uuid:
            flavor = rs.flavor_request(server.flavor).resources
            expected[server.rp_uuid] = rs.add(expected.get(server.rp_uuid, {}), flavor)
    for name, rp in d.hosts.items():
        assert d.usage(name) == expected.get(rp, {}), name


@pytest.mark.parametrize("strategy", ["legacy", "drop_and_reclaim", "max_flavor"])
@pytest.mark.parametrize("place", ["same", "other"])
def test_delete_racing_each_action_always_wins(deploy, strategy, place):
    d = deploy(
        f"[resize]\nclaim_strategy = {strategy}\n"
        f"allow_same_host = {'true' if place == 'same' else 'false'}\n"
        "[conductor]\nstuck_check_interval = 0\n",
        hosts="host1:16:65536:500,host2:16:65536:500",
    )
    f_old = d.flavor("old", **OLD)
    f_new = d.flavor("new", **NEW)
    bystander = d.boot("bystander", f_old)
    rng = random.Random(f"{strategy}-{place}")
    deleted = []
    for action in ("resize", "confirm", "revert"):
        for _ in range(ROUNDS):
            server = d.boot("vm", f_old)
            if action != "resize":
                d.conn.compute.resize_server(server, f_new.id)
                server = d.wait(server, "VERIFY_RESIZE")
            call = {
                "resize": lambda s=server: d.conn.compute.resize_server(s, f_new.id),
                "confirm": lambda s=server: d.conn.compute.confirm_server_resize(s),
                "revert": lambda s=server: d.conn.compute.revert_server_resize(s),
            }[action]

            def act(call=call):
                # NOTE: 409 or 404 is a fair answer once the delete is in.
                try:
                    call()
                except (
                    openstack.exceptions.ConflictException,
                    openstack.exceptions.NotFoundException,
                ):
                    pass

            thread = threading.Thread(target=act)
            thread.start()
            time.sleep(rng.uniform(0, 0.03))
            d.conn.compute.delete_server(server)
            thread.join()
            assert _gone(d, server.id), f"{action}: server {server.id} survived its delete"
            deleted.append(server.id)
    _quiet(d)
    for server_id in deleted:
        assert d.holds(server_id) == {}
        for migration in d.aio.db.migration_list(server_uuid=server_id):
            assert d.holds(migration.uuid) == {}, migration
    assert d.conn.compute.get_server(bystander.id).status == "ACTIVE"
    _usage_matches_live_servers(d)
    d.check()
