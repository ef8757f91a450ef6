"""Every failure a build, resize, confirm or revert can record is said in words.

Each path below is walked through the real services (the API, the conductor
and compute hosts of :class:`LiveCloud`, over the real Placement); what it
records for an operator (the ``traceback`` of each ``Error`` event, which
``openstack server event show`` prints, and the server's fault) must be a
sentence: no Python traceback, no provider UUID, the host named where one is
involved, and what to do about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.functional.api.test_instance_actions import ALICE, LiveCloud
from tests.functional.fixtures.cloud import Cloud

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

#: A sentence that tells the operator what to do, one of which each message has.
ADVICE = re.compile(r"(?:^|\. |; )(retry|free|check|delete|resize|run|fix)\b", re.IGNORECASE)


def _recorded(live: LiveCloud, server: str) -> list[tuple[str, str | None, str]]:
    """(where, host, text) of every failure recorded for ``server``."""
    found = []
    for action in live.db.action_list(server):
        for event in live.db.action_events(action.id):
            if event.result == "Error":
                found.append((f"{action.action}/{event.event}", event.host, event.traceback or ""))
    row = live.db.server_get(server)
    if row.fault_message:
        found.append(("fault", None, row.fault_message))
    return found


def _assert_in_words(
    live: LiveCloud, server: str, hosts: set[str], expected: int
) -> list[tuple[str, str | None, str]]:
    recorded = _recorded(live, server)
    assert len(recorded) >= expected, recorded
    uuids = {live.cloud.hosts[name] for name in live.cloud.hosts} | {server}
    for where, _host, text in recorded:
        assert "Traceback" not in text, (where, text)
        assert 'File "' not in text, (where, text)
        assert not any(u in text for u in uuids - {server}), (where, text)
        assert UUID.sub("", text.replace(server, "")) == text.replace(server, ""), (where, text)
        assert any(h in text for h in hosts), (where, hosts, text)
        assert ADVICE.search(text), (where, text)
        assert "\n" not in text.strip(), (where, text)
    return recorded


def _live(make_cloud: Callable[..., Cloud], strategy: str = "max_flavor", **options: Any) -> Any:
    live = LiveCloud(make_cloud(strategy, **options))
    live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    live.cloud.flavor("big", 2, 1024, 10, flavorid="big")
    live.cloud.flavor("huge", 64, 1024, 10, flavorid="huge")
    return live


def _boot(live: LiveCloud, flavor: str = "small") -> str:
    response = live.ok(
        "POST", "/servers", {"server": {"name": "vm", "flavorRef": flavor}}, token=ALICE
    )
    live.run()
    return response.json["server"]["id"]


def test_a_build_no_host_could_ever_hold(make_cloud: Callable[..., Cloud]) -> None:
    live = _live(make_cloud)
    live.add_host("h1")
    server = _boot(live, "huge")
    assert live.status(server) == "ERROR"
    _assert_in_words(live, server, {"h1", "no allowed host"}, 2)


def test_a_build_whose_spawn_fails(make_cloud: Callable[..., Cloud]) -> None:
    live = _live(make_cloud)
    live.add_host("h1", fail_on=("spawn",))
    server = _boot(live)
    assert live.status(server) == "ERROR"
    _assert_in_words(live, server, {"h1"}, 2)


def test_a_resize_deferred_then_infeasible(make_cloud: Callable[..., Cloud]) -> None:
    live = _live(make_cloud)
    live.add_host("h1", vcpus=2)
    server = _boot(live)
    live.cloud.squat("h1", VCPU=1)
    live.act(server, {"resize": {"flavorRef": "big"}})
    live.act(server, {"resize": {"flavorRef": "huge"}})
    assert live.status(server) == "ACTIVE"
    _assert_in_words(live, server, {"h1"}, 2)


def test_a_resize_whose_prep_fails_on_the_only_other_host(
    make_cloud: Callable[..., Cloud],
) -> None:
    live = _live(make_cloud, resize={"allow_same_host": False})
    live.add_host("h1")
    server = _boot(live)
    live.add_host("h2", fail_on=("prep_resize",))
    live.act(server, {"resize": {"flavorRef": "big"}})
    assert live.status(server) == "ACTIVE"
    _assert_in_words(live, server, {"h2", "h1"}, 2)


@pytest.mark.parametrize("operation", ["resize", "finish_resize"])
def test_a_resize_that_fails_on_a_host(make_cloud: Callable[..., Cloud], operation: str) -> None:
    live = _live(make_cloud, resize={"allow_same_host": False})
    live.add_host("h1", fail_on=(operation,) if operation == "resize" else ())
    server = _boot(live)
    live.add_host("h2", fail_on=(operation,) if operation != "resize" else ())
    live.act(server, {"resize": {"flavorRef": "big"}})
    assert live.status(server) == "ERROR"
    _assert_in_words(live, server, {"h1", "h2"}, 2)


def test_confirm_and_revert_that_fail_on_a_host(make_cloud: Callable[..., Cloud]) -> None:
    live = _live(make_cloud, resize={"allow_same_host": False})
    live.add_host("h1", fail_on=("confirm",))
    server = _boot(live)
    live.add_host("h2", fail_on=("revert",))
    live.act(server, {"resize": {"flavorRef": "big"}})
    live.act(server, {"confirmResize": None})
    live.act(server, {"resize": {"flavorRef": "small"}})
    live.act(server, {"revertResize": None})
    _assert_in_words(live, server, {"h1", "h2"}, 3)


def test_a_drop_and_reclaim_revert_refused_by_placement(
    make_cloud: Callable[..., Cloud],
) -> None:
    live = _live(make_cloud, "drop_and_reclaim")
    # The old flavor has more VCPU, the new more memory: reverting claims
    # back VCPU the resize gave up, which someone else takes meanwhile.
    live.cloud.flavor("old", 4, 1024, 10, flavorid="old")
    live.cloud.flavor("new", 2, 2048, 10, flavorid="new")
    live.add_host("h1", vcpus=4, memory_mb=4096, disk_gb=100)
    server = _boot(live, "old")
    live.act(server, {"resize": {"flavorRef": "new"}})
    assert live.status(server) == "VERIFY_RESIZE"
    live.cloud.squat("h1", VCPU=2)
    live.act(server, {"revertResize": None})
    assert live.status(server) == "VERIFY_RESIZE"
    _assert_in_words(live, server, {"h1"}, 2)


def test_a_restore_refused_by_placement(make_cloud: Callable[..., Cloud]) -> None:
    live = _live(make_cloud, "drop_and_reclaim")
    live.add_host("h1", vcpus=2)
    server = _boot(live)
    live.cloud.before_scheduling(lambda: live.cloud.squat("h1", VCPU=2))
    live.act(server, {"resize": {"flavorRef": "huge"}})
    assert live.db.server_get(server).needs_heal
    _assert_in_words(live, server, {"h1"}, 2)
