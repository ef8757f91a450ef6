"""``os-migrateLive`` through the API, the conductor and two fake compute
hosts over the real Placement: success, a failure at each part with its
exact rollback, abort, force-complete, a delete racing it, and the bad
requests (each changing nothing).

Messages are delivered one at a time (:class:`LiveCloud`), so the
allocations of both consumers are asserted after every step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resize_sched.conductor import recovery
from resize_sched.db import models
from tests.functional.api.test_instance_actions import ADMIN, ALICE, BOB, LiveCloud, events
from tests.functional.fixtures.cloud import Cloud

SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}


@pytest.fixture
def live(make_cloud: Callable[..., Cloud]) -> Iterator[LiveCloud]:
    cloud = LiveCloud(make_cloud())
    cloud.cloud.flavor("small", 1, 512, 5, flavorid="small")
    yield cloud


def _boot(live: LiveCloud, *hosts: str, fail_on: dict[str, tuple[str, ...]] | None = None) -> str:
    """Hosts ``hosts`` and a server of project-a on the first of them."""
    for host in hosts:
        live.add_host(host, fail_on=(fail_on or {}).get(host, ()))
    flavor = live.db.flavor_get("small")
    for host in hosts[1:]:
        live.ok(
            "PUT", f"/os-services/{_service(live, host)}", {"status": "disabled"}, version="2.53"
        )
    server, _ = live.boot(flavor)
    for host in hosts[1:]:
        live.ok(
            "PUT", f"/os-services/{_service(live, host)}", {"status": "enabled"}, version="2.53"
        )
    assert live.db.server_get(server).host == hosts[0]
    return server


def _service(live: LiveCloud, host: str) -> str:
    return str(live.db.service_get_by_host(host).uuid)


def _migrate(live: LiveCloud, server: str, host: str | None = None, **kw: Any) -> Any:
    body = {"os-migrateLive": {"host": host, "block_migration": "auto"}}
    return live.request("POST", f"/servers/{server}/action", body, version="2.30", **kw)


def _until(live: LiveCloud, method: str) -> None:
    """Deliver messages until the next one queued is ``method`` (not delivered)."""
    while live.queue and live.queue[0].method != method:
        message = live.queue.popleft()
        live.deliver(message)
        live.delivered.append(message)
    assert live.queue and live.queue[0].method == method, f"{method} was never sent"


def _jump(live: LiveCloud, method: str) -> None:
    """Deliver the last queued message (the API's cast of ``method`` to the
    conductor) and the one it sends the source, ahead of the queue: as the
    source's RPC server takes a message while its hand-over runs."""
    for _ in ("conductor", "source"):
        message = live.queue.pop()
        assert message.method == method, message
        live.deliver(message)
        live.delivered.append(message)


def _holds(live: LiveCloud, consumer: str) -> dict[str, dict[str, int]]:
    return live.cloud.holds(consumer)


def _on(live: LiveCloud, host: str) -> dict[str, dict[str, int]]:
    return live.cloud.on(host, SMALL)


def _migration(live: LiveCloud, server: str) -> Any:
    (migration,) = live.db.migration_list(server_uuid=server)
    return migration


def _state(live: LiveCloud, server: str) -> tuple[str, str, str | None, str | None]:
    row = live.db.server_get(server)
    return row.status, row.vm_state, row.task_state, row.host


def _copies(live: LiveCloud, server: str) -> list[str]:
    """The hosts whose fake hypervisor has a copy of ``server``."""
    return sorted(h for h, c in live.computes.items() if c.driver.get_instance(server))  # type: ignore[attr-defined]


def test_a_live_migration_holds_the_source_until_it_completes(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    response = _migrate(live, server)
    assert response.status_int == 202, response.text
    migration = _migration(live, server)
    assert (migration.migration_type, migration.status) == ("live-migration", "accepted")
    assert _state(live, server) == ("MIGRATING", "active", "migrating", "h1")

    _until(live, "pre_live_migration")
    migration = _migration(live, server)
    assert (migration.status, migration.dest_host) == ("preparing", "h2")
    # The migration holds the source, the server the destination.
    assert _holds(live, migration.uuid) == _on(live, "h1")
    assert _holds(live, server) == _on(live, "h2")
    live.cloud.check()

    _until(live, "live_migration")
    assert _migration(live, server).status == "running"
    assert _state(live, server)[0] == "MIGRATING"
    live.cloud.check()

    live.run()
    migration = _migration(live, server)
    assert migration.status == "completed"
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    assert live.db.server_get(server).rp_uuid == live.cloud.hosts["h2"]
    assert _holds(live, migration.uuid) == {}
    assert _holds(live, server) == _on(live, "h2")
    assert _copies(live, server) == ["h2"]
    live.cloud.check()

    (action,) = [a for a in live.actions(server) if a["action"] == "live-migration"]
    detail = live.action(server, action["request_id"])
    assert events(detail) == [
        ("conductor_live_migrate_instance", "Success"),
        ("compute_pre_live_migration", "Success"),
        ("compute_live_migration", "Success"),
        ("conductor_post_live_migration", "Success"),
    ]


def test_a_live_migration_completes_on_hosts_whose_inventory_shrank(live: LiveCloud) -> None:
    """The completion gives the source back by emptying the migration alone:
    with both hosts' MEMORY_MB max_unit lowered below the flavor during the
    hand-over, a re-write of the server's holding would be refused."""
    server = _boot(live, "h1", "h2")
    assert _migrate(live, server).status_int == 202
    _until(live, "live_migration")
    for host in ("h1", "h2"):
        rp = live.cloud.hosts[host]
        inventory, generation = live.cloud.observer.get_inventories(rp)
        memory = {**inventory["MEMORY_MB"], "max_unit": SMALL["MEMORY_MB"] // 2}
        live.cloud.observer.set_inventory(rp, {**inventory, "MEMORY_MB": memory}, generation)
    live.run()
    migration = _migration(live, server)
    assert migration.status == "completed"
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    assert _holds(live, migration.uuid) == {}
    assert _holds(live, server) == _on(live, "h2")
    live.cloud.check()


def test_a_named_host_is_the_only_one_asked(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2", "h3")
    assert _migrate(live, server, "h3").status_int == 202
    live.run()
    assert _state(live, server) == ("ACTIVE", "active", None, "h3")
    assert _holds(live, server) == _on(live, "h3")
    live.cloud.check()


@pytest.mark.parametrize(
    ("host", "operation", "event"),
    [
        ("h2", "pre_live_migration", "compute_pre_live_migration"),
        ("h1", "live_migration", "compute_live_migration"),
    ],
)
def test_a_failed_part_rolls_back_exactly(
    live: LiveCloud, host: str, operation: str, event: str
) -> None:
    server = _boot(live, "h1", "h2", fail_on={host: (operation,)})
    before = _holds(live, server)
    assert _migrate(live, server, "h2").status_int == 202
    live.run()
    migration = _migration(live, server)
    assert migration.status == "error"
    assert _state(live, server) == ("ACTIVE", "active", None, "h1")
    assert _holds(live, server) == before == _on(live, "h1")
    assert _holds(live, migration.uuid) == {}
    assert _copies(live, server) == ["h1"]
    live.cloud.check()
    (action,) = [a for a in live.actions(server) if a["action"] == "live-migration"]
    detail = live.action(server, action["request_id"])
    failed = [e for e in detail["events"] if e["event"] == event]
    assert failed[0]["result"] == "Error"
    assert "rolled back" in failed[0]["traceback"]


def test_a_failed_clean_up_leaves_the_server_on_its_destination_alone(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2", fail_on={"h1": ("post_live_migration",)})
    assert _migrate(live, server, "h2").status_int == 202
    live.run()
    migration = _migration(live, server)
    assert migration.status == "error"
    status, vm_state, task_state, host = _state(live, server)
    assert (status, task_state, host) == ("ERROR", None, "h2")
    # Held once, where it runs.
    assert _holds(live, server) == _on(live, "h2")
    assert _holds(live, migration.uuid) == {}
    live.cloud.check()


def test_abort_rolls_back_as_cancelled(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    assert _migrate(live, server, "h2").status_int == 202
    _until(live, "live_migration")
    migration = _migration(live, server)
    path = f"/servers/{server}/migrations/{migration.id}"
    listed = live.ok("GET", f"/servers/{server}/migrations", version="2.80").json["migrations"]
    assert [(m["id"], m["status"], m["dest_compute"]) for m in listed] == [
        (migration.id, "running", "h2")
    ]
    assert live.request("DELETE", path, version="2.23").status_int == 404
    assert live.request("DELETE", path, version="2.24").status_int == 202
    # The abort reaches the source before its hand-over starts: it stops at once.
    _jump(live, "live_migration_abort")
    live.run()
    migration = _migration(live, server)
    assert migration.status == "cancelled"
    assert _state(live, server) == ("ACTIVE", "active", None, "h1")
    assert _holds(live, server) == _on(live, "h1")
    assert _holds(live, migration.uuid) == {}
    assert _copies(live, server) == ["h1"]
    live.cloud.check()
    assert live.ok("GET", f"/servers/{server}/migrations", version="2.80").json == {
        "migrations": []
    }


def test_force_complete_ends_a_long_hand_over(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    live.computes["h1"].driver.live_migration_s = 60.0  # type: ignore[attr-defined]
    assert _migrate(live, server, "h2").status_int == 202
    _until(live, "live_migration")
    migration = _migration(live, server)
    path = f"/servers/{server}/migrations/{migration.id}/action"
    assert live.request("POST", path, {"force_complete": None}, version="2.22").status_int == 202
    _jump(live, "live_migration_force_complete")
    started = time.monotonic()
    live.run()
    assert time.monotonic() - started < 30
    assert _migration(live, server).status == "completed"
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    live.cloud.check()


def test_a_delete_during_the_migration_wins(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    assert _migrate(live, server, "h2").status_int == 202
    _until(live, "live_migration")
    assert live.request("DELETE", f"/servers/{server}", token=ALICE).status_int == 204
    live.run()
    assert live.db.server_get(server, read_deleted=True).status == "DELETED"
    migration = _migration(live, server)
    assert migration.status == "error"
    assert _holds(live, server) == {} and _holds(live, migration.uuid) == {}
    assert _copies(live, server) == []
    live.cloud.check()


def test_bad_requests_change_nothing(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    live.add_host("h3")
    live.ok("PUT", f"/os-services/{_service(live, 'h3')}", {"status": "disabled"}, version="2.53")
    before = (_state(live, server), _holds(live, server))

    def refused(status: int, host: str | None = None, **kw: Any) -> str:
        response = _migrate(live, server, host, **kw)
        assert response.status_int == status, response.text
        assert live.db.migration_list(server_uuid=server) == []
        assert (_state(live, server), _holds(live, server)) == before
        assert not live.queue
        return response.text

    assert "could not be found" in refused(400, "nowhere")
    assert "already runs on host h1" in refused(400, "h1")
    assert "disabled" in refused(400, "h3")
    refused(403, "h2", token=ALICE)
    refused(404, "h2", token=BOB)
    bad = live.request(
        "POST",
        f"/servers/{server}/action",
        {"os-migrateLive": {"host": None}},
        version="2.30",
    )
    assert bad.status_int == 400
    # disk_over_commit is required up to 2.24, gone from 2.25.
    old = {"os-migrateLive": {"host": None, "block_migration": False, "disk_over_commit": False}}
    path = f"/servers/{server}/action"
    assert live.request("POST", path, old, version="2.25").status_int == 400
    # force is gone from 2.68.
    forced = {"os-migrateLive": {"host": "h2", "block_migration": "auto", "force": True}}
    assert live.request("POST", path, forced, version="2.68").status_int == 400
    live.act(server, {"os-stop": None})
    stopped = _state(live, server)
    assert stopped[0] == models.STATUS_SHUTOFF
    before = (stopped, _holds(live, server))
    assert "vm_state stopped" in refused(409, "h2")


def test_the_first_microversion_takes_disk_over_commit(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    body = {"os-migrateLive": {"host": None, "block_migration": False, "disk_over_commit": False}}
    response = live.request("POST", f"/servers/{server}/action", body, token=ADMIN)
    assert response.status_int == 202, response.text
    live.run()
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    live.cloud.check()


@pytest.mark.parametrize(
    ("lost", "status"),
    [
        ("live_migrate_server", "accepted"),
        ("pre_live_migration", "preparing"),
        ("live_migration", "running"),
    ],
)
def test_a_lost_message_is_sent_again_by_recovery(live: LiveCloud, lost: str, status: str) -> None:
    """A conductor that stopped (or a message the broker lost) at each status:
    the next conductor's start takes the migration on from there."""
    server = _boot(live, "h1", "h2")
    assert _migrate(live, server).status_int == 202
    _until(live, lost)
    live.queue.popleft()
    assert _migration(live, server).status == status
    live.cloud.check()
    report = recovery.recover(live.conductor)
    assert list(report.resumed.values()) != ["nothing to do"], report
    live.run()
    migration = _migration(live, server)
    assert migration.status == "completed"
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    assert _holds(live, server) == _on(live, "h2")
    assert _holds(live, migration.uuid) == {}
    assert _copies(live, server) == ["h2"]
    live.cloud.check()


def test_a_restarted_source_hands_over_what_it_forgot(live: LiveCloud) -> None:
    """The source's compute service restarted before the hand-over (the fake
    forgets its servers): the hand-over adopts the server from the message."""
    server = _boot(live, "h1", "h2")
    assert _migrate(live, server).status_int == 202
    _until(live, "live_migration")
    live.computes["h1"].driver.destroy(server)  # type: ignore[attr-defined]
    live.run()
    assert _migration(live, server).status == "completed"
    assert _copies(live, server) == ["h2"]
    live.cloud.check()


class _Notifier:
    """Keeps what a compute host would send on the notification bus."""

    def __init__(self, host: str, sent: list[tuple[str, str, str]]) -> None:
        self.host, self.sent = host, sent

    def is_enabled(self) -> bool:
        return True

    def info(self, ctxt: Any, event_type: str, payload: dict[str, Any]) -> None:
        data = payload["nova_object.data"]
        self.sent.append((self.host, event_type, f"{data['host']}/{data['task_state']}"))

    error = info


@pytest.mark.parametrize("abort", [False, True])
def test_nova_s_versioned_notifications_in_order(live: LiveCloud, abort: bool) -> None:
    server = _boot(live, "h1", "h2")
    sent: list[tuple[str, str, str]] = []
    for host, compute in live.computes.items():
        compute.notifier = _Notifier(host, sent)  # type: ignore[assignment]
    assert _migrate(live, server, "h2").status_int == 202
    if abort:
        _until(live, "live_migration")
        migration = _migration(live, server)
        path = f"/servers/{server}/migrations/{migration.id}"
        assert live.request("DELETE", path, version="2.24").status_int == 202
        _jump(live, "live_migration_abort")
    live.run()
    if abort:
        assert sent == [
            ("h2", "instance.live_migration_pre.start", "h1/migrating"),
            ("h2", "instance.live_migration_pre.end", "h1/migrating"),
            ("h1", "instance.live_migration_abort.start", "h1/migrating"),
            ("h1", "instance.live_migration_abort.end", "h1/migrating"),
            ("h2", "instance.live_migration_rollback_dest.start", "h1/migrating"),
            ("h2", "instance.live_migration_rollback_dest.end", "h1/None"),
            ("h1", "instance.live_migration_rollback.start", "h1/migrating"),
            ("h1", "instance.live_migration_rollback.end", "h1/None"),
        ]
    else:
        assert sent == [
            ("h2", "instance.live_migration_pre.start", "h1/migrating"),
            ("h2", "instance.live_migration_pre.end", "h1/migrating"),
            ("h1", "instance.live_migration_post.start", "h1/migrating"),
            ("h1", "instance.live_migration_post.end", "h1/migrating"),
            ("h2", "instance.live_migration_post_dest.start", "h1/migrating"),
            ("h2", "instance.live_migration_post_dest.end", "h2/None"),
        ]
