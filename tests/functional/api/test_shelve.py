"""``shelve``, ``shelveOffload`` and ``unshelve`` through the API, the
conductor and the fake hypervisor, over the real Placement.

After every step the server's allocations are asserted provider by
provider: SHELVED holds its host's room, SHELVED_OFFLOADED holds nothing,
an unshelved server holds exactly its flavor on its new host. Each host's
report is delivered twice (the second is a logged no-op), refusals change
nothing, and a delete racing an unshelve leaves nothing held.
"""

import datetime
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resize_sched.conductor import audit, heal, recovery
from resize_sched.conductor.tasks.shelve import UnshelveTask
from resize_sched.placement import aggregates as mirror
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.api.harness import ALICE, BOB
from tests.functional.api.test_instance_actions import LiveCloud, events
from tests.functional.fixtures.cloud import Cloud
from tests.unit.test_notifications import RecordingNotifier

SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 5}


@pytest.fixture
def live(make_cloud: Callable[..., Cloud]) -> Iterator[LiveCloud]:
    live = LiveCloud(make_cloud())
    # NOTE: most tests look at SHELVED before offloading it themselves.
    live.cloud.conf.set_override("shelved_offload_time", -1)
    yield live


@pytest.fixture
def small(live: LiveCloud) -> Any:
    return live.cloud.flavor("small", 1, 512, 5, flavorid="small")


def _held(live: LiveCloud, server: str) -> dict[str, dict[str, int]]:
    """What the server's consumer holds, by host name."""
    names = {rp: name for name, rp in live.cloud.hosts.items()}
    held = live.cloud.observer.get_allocations(server).allocations
    return {names[rp]: dict(amounts) for rp, amounts in held.items()}


def _usage(live: LiveCloud) -> dict[str, dict[str, int]]:
    """Every host's usage, leaving out classes at 0."""
    return {
        name: {rc: n for rc, n in live.cloud.usage(name).items() if n} for name in live.cloud.hosts
    }


def _state(live: LiveCloud, server: str) -> tuple[Any, ...]:
    body = live.ok("GET", f"/servers/{server}").json["server"]
    return (
        body["status"],
        body["OS-EXT-STS:vm_state"],
        body["OS-EXT-STS:task_state"],
        body["OS-EXT-STS:power_state"],
        body["OS-EXT-SRV-ATTR:host"],
    )


def _on(live: LiveCloud, host: str, server: str) -> str | None:
    """The server's power state on ``host``'s fake hypervisor (None: not there)."""
    instance = live.computes[host].driver.get_instance(server)  # type: ignore[attr-defined]
    return None if instance is None else instance.power_state


def _post(live: LiveCloud, server: str, body: Any, **kw: Any) -> int:
    return live.request("POST", f"/servers/{server}/action", body, **kw).status_int


def _replay(live: LiveCloud, *methods: str) -> None:
    """Deliver each already-delivered message of ``methods`` again."""
    for message in [m for m in live.delivered if m.method in methods]:
        live.deliver(message)
    live.run()


def test_shelve_offload_unshelve_hold_exactly_what_each_state_holds(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    assert _held(live, server) == {"h1": SMALL}

    shelve_id = live.act(server, {"shelve": None})
    assert _state(live, server) == ("SHELVED", "shelved", None, 4, "h1")
    assert _on(live, "h1", server) == "shutoff"
    assert _held(live, server) == {"h1": SMALL}
    assert _usage(live) == {"h1": SMALL}
    shelved = live.action(server, shelve_id)
    assert shelved["action"] == "shelve"
    assert events(shelved) == [("compute_shelve_instance", "Success")]
    live.cloud.check()

    offload_id = live.act(server, {"shelveOffload": None}, token="admin:admin")
    assert _state(live, server) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, 0, None)
    assert _on(live, "h1", server) is None
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    offloaded = live.action(server, offload_id)
    assert offloaded["action"] == "shelveOffload"
    assert events(offloaded) == [("compute_shelve_offload_instance", "Success")]
    live.cloud.check()

    # A second host, emptier: the scheduler places the unshelved server there.
    live.add_host("h2", vcpus=8, memory_mb=8192)
    unshelve_id = live.act(server, {"unshelve": None})
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h2")
    assert _on(live, "h2", server) == "running"
    assert _held(live, server) == {"h2": SMALL}
    assert _usage(live) == {"h1": {}, "h2": SMALL}
    unshelved = live.action(server, unshelve_id)
    assert unshelved["action"] == "unshelve"
    assert events(unshelved) == [
        ("schedule_instances", "Success"),
        ("compute_unshelve_instance", "Success"),
    ]
    live.cloud.check()

    # Every host report again, late: nothing changes.
    _replay(live, "server_shelved", "server_offloaded", "server_unshelved", "unshelve_server")
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h2")
    assert _usage(live) == {"h1": {}, "h2": SMALL}
    assert len(events(live.action(server, unshelve_id))) == 2
    live.cloud.check()


def test_shelve_offloads_at_once_with_shelved_offload_time_0(live: LiveCloud, small: Any) -> None:
    live.cloud.conf.set_override("shelved_offload_time", 0)
    live.add_host("h1")
    server, _ = live.boot(small)
    shelve_id = live.act(server, {"shelve": {}})
    assert _state(live, server) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, 0, None)
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    action = live.action(server, shelve_id)
    assert events(action) == [
        ("compute_shelve_instance", "Success"),
        ("compute_shelve_offload_instance", "Success"),
    ]
    assert [a["action"] for a in live.actions(server)] == ["shelve", "create"]
    # The shelve's action ends once the offload that is part of it has.
    (recorded,) = [a for a in live.db.action_list(server) if a.action == "shelve"]
    assert recorded.finish_time is not None
    live.cloud.check()


def test_unshelve_of_a_shelved_server_keeps_its_allocation(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    live.add_host("h2", vcpus=8, memory_mb=8192)
    server, _ = live.boot(small)
    host = live.db.server_get(server).host
    live.act(server, {"shelve": None})
    generation = live.cloud.observer.get_allocations(server).generation
    unshelve_id = live.act(server, {"unshelve": None})
    assert _state(live, server) == ("ACTIVE", "active", None, 1, host)
    assert _on(live, host, server) == "running"
    assert _held(live, server) == {host: SMALL}
    # Nothing written to Placement (the same consumer generation), nothing scheduled.
    assert live.cloud.observer.get_allocations(server).generation == generation
    assert events(live.action(server, unshelve_id)) == [("compute_unshelve_instance", "Success")]
    live.cloud.check()


def test_refusals_change_nothing(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)

    def unchanged() -> tuple[Any, ...]:
        return (
            _state(live, server),
            _held(live, server),
            len(live.actions(server)),
            live.db.request_spec_get(server).availability_zone,
        )

    before = unchanged()
    assert _post(live, server, {"unshelve": None}) == 409  # ACTIVE
    assert _post(live, server, {"shelveOffload": None}) == 409  # ACTIVE (admin)
    assert _post(live, server, {"shelve": None}, token=BOB) == 404  # another project's
    assert _post(live, server, {"shelve": {"x": 1}, "unshelve": None}) == 400
    assert unchanged() == before
    assert not live.queue

    live.act(server, {"shelve": None})
    before = unchanged()
    assert _post(live, server, {"shelve": None}) == 409  # already SHELVED
    assert _post(live, server, {"shelveOffload": None}, token=ALICE) == 403  # admin only
    assert _post(live, server, {"unshelve": None}, token=BOB) == 404
    # 2.77: a zone only for an offloaded server (409), before its name is checked.
    zoned = {"unshelve": {"availability_zone": "nowhere"}}
    assert _post(live, server, zoned, version="2.77") == 409
    assert _post(live, server, {"unshelve": {}}, version="2.77") == 400  # not an empty object
    assert unchanged() == before
    assert not live.queue

    live.act(server, {"shelveOffload": None}, token="admin:admin")
    before = unchanged()
    assert _post(live, server, zoned, version="2.77") == 400  # no such zone
    assert _post(live, server, {"shelveOffload": None}) == 409  # already offloaded
    assert _post(live, server, {"shelve": None}) == 409
    assert unchanged() == before
    assert not live.queue
    live.cloud.check()


def test_an_unshelve_nothing_fits_stays_offloaded_holding_nothing(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1", vcpus=1, memory_mb=1024)
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    squatter = live.cloud.squat("h1", VCPU=1)
    unshelve_id = live.act(server, {"unshelve": None})
    assert _state(live, server) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, 0, None)
    assert _held(live, server) == {}
    fault = live.db.server_get(server).fault_message
    assert "No host could take the unshelved server" in fault
    assert "stays SHELVED_OFFLOADED and holds nothing" in fault
    action = live.action(server, unshelve_id)
    assert events(action) == [("schedule_instances", "Error")]
    assert action["events"][0]["traceback"] == fault
    live.cloud.check()

    # Room again: the same unshelve, asked again, places it.
    live.cloud.leave(squatter)
    live.act(server, {"unshelve": None})
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h1")
    assert _held(live, server) == {"h1": SMALL}
    live.cloud.check()


def test_an_unshelve_whose_spawn_fails_gives_the_claim_back(live: LiveCloud, small: Any) -> None:
    live.add_host("h1", fail_on=("unshelve",))
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    unshelve_id = live.act(server, {"unshelve": None})
    assert _state(live, server) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, 0, None)
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    fault = live.db.server_get(server).fault_message
    assert fault.startswith("Unshelving the server on host h1 failed: Injected failure")
    assert "SHELVED_OFFLOADED and holds nothing" in fault
    assert events(live.action(server, unshelve_id)) == [
        ("schedule_instances", "Success"),
        ("compute_unshelve_instance", "Error"),
    ]
    # The failure reported again: not due.
    _replay(live, "operation_failed")
    assert _held(live, server) == {}
    assert len(events(live.action(server, unshelve_id))) == 2
    live.cloud.check()


def test_a_failed_shelve_leaves_the_server_as_it_was(live: LiveCloud, small: Any) -> None:
    live.add_host("h1", fail_on=("shelve",))
    server, _ = live.boot(small)
    shelve_id = live.act(server, {"shelve": None})
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h1")
    assert _held(live, server) == {"h1": SMALL}
    ((event, result),) = events(live.action(server, shelve_id))
    assert (event, result) == ("compute_shelve_instance", "Error")
    live.cloud.check()


@pytest.mark.parametrize("claimed", [False, True], ids=["before-the-claim", "after-the-claim"])
def test_a_delete_racing_an_unshelve_leaves_nothing_held(
    live: LiveCloud, small: Any, claimed: bool
) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    live.ok("POST", f"/servers/{server}/action", {"unshelve": None})
    if claimed:
        # The conductor claims on h1 and casts the spawn; then the delete.
        live.deliver(live.queue.popleft())
        assert _held(live, server) == {"h1": SMALL}
    live.ok("DELETE", f"/servers/{server}")
    live.run()
    assert live.db.server_get(server, read_deleted=True).status == "DELETED"
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    live.cloud.check()


def test_a_delete_racing_an_offload_leaves_nothing_held(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.ok("POST", f"/servers/{server}/action", {"shelveOffload": None})
    live.deliver(live.queue.popleft())  # the conductor casts the offload to h1
    live.ok("DELETE", f"/servers/{server}")
    live.run()
    assert live.db.server_get(server, read_deleted=True).status == "DELETED"
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    live.cloud.check()


def test_unshelve_respects_the_server_group(live: LiveCloud, small: Any) -> None:
    live.add_host("h1", vcpus=8, memory_mb=8192)
    group = live.ok(
        "POST",
        "/os-server-groups",
        {"server_group": {"name": "g", "policy": "affinity"}},
        token=ALICE,
        version="2.64",
    ).json["server_group"]["id"]
    members = []
    for _ in range(2):
        response = live.ok(
            "POST",
            "/servers",
            {
                "server": {"name": "vm", "flavorRef": "small"},
                "os:scheduler_hints": {"group": group},
            },
            token=ALICE,
        )
        live.run()
        members.append(response.json["server"]["id"])
    first, second = members
    loner, _ = live.boot(small)
    live.cloud.conf.set_override("shelved_offload_time", 0)
    live.act(second, {"shelve": None})
    live.act(loner, {"shelve": None})
    assert _held(live, second) == _held(live, loner) == {}
    # An emptier host now exists: a server in no group goes there, but the
    # group keeps its member with the other.
    live.add_host("h2", vcpus=16, memory_mb=16384)
    live.act(loner, {"unshelve": None})
    assert _state(live, loner)[::4] == ("ACTIVE", "h2")
    live.act(second, {"unshelve": None})
    assert _state(live, second)[::4] == ("ACTIVE", "h1")
    assert _held(live, second) == {"h1": SMALL}
    assert _held(live, first) == {"h1": SMALL}
    live.cloud.check()


def test_unshelve_into_an_availability_zone_from_2_77(live: LiveCloud, small: Any) -> None:
    live.add_host("h1", vcpus=8, memory_mb=8192)
    live.add_host("h2")
    agg = live.db.aggregate_create("agg-az2", "az2")
    live.db.aggregate_add_host(agg.id, "h2")
    assert mirror.add_host(live.db, live.cloud.observer, "h2", agg.uuid)
    server, _ = live.boot(small)
    assert live.db.server_get(server).host == "h1"
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    # Before 2.77 the body's value is not read: the zone is ignored.
    zoned = {"unshelve": {"availability_zone": "az2"}}
    response = live.request(
        "POST", f"/servers/{server}/action", zoned, token=ALICE, version="2.76"
    )
    assert response.status_int == 202
    live.run()
    assert _state(live, server)[::4] == ("ACTIVE", "h1")
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")

    response = live.request(
        "POST", f"/servers/{server}/action", zoned, token=ALICE, version="2.77"
    )
    assert response.status_int == 202
    live.run()
    assert _state(live, server)[::4] == ("ACTIVE", "h2")
    assert _held(live, server) == {"h2": SMALL}
    assert live.db.request_spec_get(server).availability_zone == "az2"
    body = live.ok("GET", f"/servers/{server}").json["server"]
    assert body["OS-EXT-AZ:availability_zone"] == "az2"
    live.cloud.check()


def test_the_conductor_capped_below_1_6_refuses_before_recording(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.conductor_client.can_shelve = False  # type: ignore[misc]
    assert _post(live, server, {"shelve": None}) == 409
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h1")
    assert [a["action"] for a in live.actions(server)] == ["create"]
    assert not live.queue


def test_the_sweep_offloads_after_shelved_offload_time(live: LiveCloud, small: Any) -> None:
    live.cloud.conf.set_override("shelved_offload_time", 60)
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    shelved_at = live.db.server_get(server).updated_at
    assert live.conductor.offload_shelved(now=shelved_at + datetime.timedelta(seconds=59)) == []
    assert _held(live, server) == {"h1": SMALL}

    later = shelved_at + datetime.timedelta(seconds=61)
    assert live.conductor.offload_shelved(now=later) == [server]
    # A second sweep (or another conductor's) finds it offloading: not again.
    assert live.conductor.offload_shelved(now=later) == []
    live.run()
    assert _state(live, server) == ("SHELVED_OFFLOADED", "shelved_offloaded", None, 0, None)
    assert _held(live, server) == {}
    (offload,) = [a for a in live.actions(server) if a["action"] == "shelveOffload"]
    action = live.action(server, offload["request_id"])
    assert events(action) == [("compute_shelve_offload_instance", "Success")]
    live.cloud.check()


def test_shelved_offload_time_minus_1_never_offloads(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    far = live.db.server_get(server).updated_at + datetime.timedelta(days=365)
    assert live.conductor.offload_shelved(now=far) == []
    assert _state(live, server) == ("SHELVED", "shelved", None, 4, "h1")
    assert _held(live, server) == {"h1": SMALL}


def test_the_hosts_send_nova_s_shelve_notifications(live: LiveCloud, small: Any) -> None:
    live.cloud.conf.set_override("shelved_offload_time", 0)
    live.add_host("h1")
    notifier = RecordingNotifier()
    live.computes["h1"].notifier = notifier  # type: ignore[assignment]
    server, _ = live.boot(small)
    notifier.sent.clear()
    live.act(server, {"shelve": None})
    live.act(server, {"unshelve": None})
    seen = [
        (
            priority,
            event_type,
            payload["nova_object.name"],
            payload["nova_object.data"]["state"],
            payload["nova_object.data"]["task_state"],
            payload["nova_object.data"]["uuid"],
        )
        for priority, event_type, payload in notifier.sent
    ]
    payload = "InstanceActionPayload"
    assert seen == [
        ("INFO", "instance.shelve.start", payload, "active", "shelving", server),
        ("INFO", "instance.shelve.end", payload, "shelved", None, server),
        (
            "INFO",
            "instance.shelve_offload.start",
            payload,
            "shelved",
            "shelving_offloading",
            server,
        ),
        ("INFO", "instance.shelve_offload.end", payload, "shelved_offloaded", None, server),
        ("INFO", "instance.unshelve.start", payload, "shelved_offloaded", "spawning", server),
        ("INFO", "instance.unshelve.end", payload, "active", None, server),
    ]


def test_recovery_sends_a_lost_shelve_step_again(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.ok("POST", f"/servers/{server}/action", {"shelve": None})
    live.deliver(live.queue.popleft())  # the conductor casts to h1 ...
    lost = live.queue.popleft()  # ... and the message is lost
    assert (lost.host, lost.method) == ("h1", "shelve_instance")
    assert _state(live, server)[:3] == ("ACTIVE", "active", "shelving")
    report = recovery.recover(live.conductor)
    assert report.resumed == {server: "shelve sent again to h1"}
    live.run()
    assert _state(live, server) == ("SHELVED", "shelved", None, 4, "h1")
    assert _held(live, server) == {"h1": SMALL}
    # Nothing in flight any more: a second recovery finds nothing.
    assert recovery.recover(live.conductor).found == 0
    live.cloud.check()


def test_recovery_adopts_the_claim_of_an_unshelve_that_stopped(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    live.ok("POST", f"/servers/{server}/action", {"unshelve": None})
    live.queue.clear()  # the conductor stopped before taking the cast ...
    # ... after its claim had landed (as the scheduling step writes it).
    row = live.db.server_get(server)
    live.cloud.deps.executor.claim_server(
        row, {live.cloud.hosts["h1"]: SMALL}, expected=UnshelveTask.SCHEDULING
    )
    assert _held(live, server) == {"h1": SMALL}
    assert _state(live, server)[:3] == ("SHELVED_OFFLOADED", "shelved_offloaded", "unshelving")
    report = recovery.recover(live.conductor)
    assert report.resumed == {server: "unshelve sent to h1"}
    live.run()
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h1")
    assert _held(live, server) == {"h1": SMALL}
    assert _usage(live) == {"h1": SMALL}
    live.cloud.check()


def test_recovery_schedules_again_an_unshelve_that_claimed_nothing(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    live.act(server, {"shelveOffload": None}, token="admin:admin")
    live.ok("POST", f"/servers/{server}/action", {"unshelve": None})
    live.queue.clear()  # the cast to the conductor was lost
    report = recovery.recover(live.conductor)
    assert report.resumed[server].startswith("unshelve scheduled again")
    live.run()
    assert _state(live, server) == ("ACTIVE", "active", None, 1, "h1")
    assert _held(live, server) == {"h1": SMALL}
    live.cloud.check()


def test_a_delete_racing_a_shelve_leaves_nothing_held(live: LiveCloud, small: Any) -> None:
    live.add_host("h1")
    server, _ = live.boot(small)
    live.ok("POST", f"/servers/{server}/action", {"shelve": None})
    live.deliver(live.queue.popleft())  # the conductor casts the shelve to h1
    live.ok("DELETE", f"/servers/{server}")
    live.run()  # h1 shelves it and reports, late: the delete has won
    assert live.db.server_get(server, read_deleted=True).status == "DELETED"
    assert _held(live, server) == {}
    assert _usage(live) == {"h1": {}}
    live.cloud.check()


def test_audit_and_heal_know_what_each_shelved_state_holds(live: LiveCloud, small: Any) -> None:
    live.add_host("h1", vcpus=8, memory_mb=8192)
    shelved, _ = live.boot(small)
    offloaded, _ = live.boot(small)
    placing, _ = live.boot(small)
    for server in (shelved, offloaded, placing):
        live.act(server, {"shelve": None})
    for server in (offloaded, placing):
        live.act(server, {"shelveOffload": None}, token="admin:admin")
    # An unshelve whose claim landed before its host was recorded.
    live.ok("POST", f"/servers/{placing}/action", {"unshelve": None})
    live.queue.clear()
    live.cloud.deps.executor.claim_server(
        live.db.server_get(placing),
        {live.cloud.hosts["h1"]: SMALL},
        expected=UnshelveTask.SCHEDULING,
    )
    trait = DEFAULT_OWNER_TRAIT
    assert audit.audit(live.db, live.cloud.observer, owner_trait=trait).orphans == []

    report = heal.heal(live.db, live.cloud.observer, owner_trait=trait)
    assert (report.ok, report.results) == (1, [])  # the SHELVED one holds its flavor
    # Its room lost in Placement: heal gives a SHELVED server its room back.
    live.cloud.observer.delete_allocations(shelved)
    report = heal.heal(live.db, live.cloud.observer, owner_trait=trait)
    assert [(r.server_uuid, r.outcome) for r in report.results] == [(shelved, heal.HEALED)]
    assert _held(live, shelved) == {"h1": SMALL}
    assert _held(live, offloaded) == {}


def test_a_failed_unshelve_in_place_stays_shelved_holding_its_room(
    live: LiveCloud, small: Any
) -> None:
    live.add_host("h1", fail_on=("unshelve",))
    server, _ = live.boot(small)
    live.act(server, {"shelve": None})
    unshelve_id = live.act(server, {"unshelve": None})
    assert _state(live, server) == ("SHELVED", "shelved", None, 4, "h1")
    assert _held(live, server) == {"h1": SMALL}
    action = live.action(server, unshelve_id)
    assert events(action) == [("compute_unshelve_instance", "Error")]
    said = action["events"][0]["traceback"]
    assert said.startswith("Unshelving the server on host h1 failed: Injected failure")
    assert "stays SHELVED on host h1, holding its room there" in said
    live.cloud.check()
