"""The quota APIs and their enforcement with ``[quota] driver = unified_limits``.

Keystone's limits come from oslo.limit's own stand-in for Keystone
(:class:`oslo_limit.fixture.LimitFixture`) through oslo.limit's real
Enforcer; the API, its database and the recorded conductor are real. The
same against a real Keystone: ``test_quota_unified_limits_keystone.py``.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from oslo_limit import exception as limit_exceptions
from oslo_limit import fixture as limit_fixture
from oslo_limit import limit

from resize_sched import exception
from resize_sched.conf import quota as quota_conf
from resize_sched.quota import unified_limits
from tests.functional.api.harness import ADMIN, ALICE, ApiHarness
from tests.functional.api.test_quotas import CORE, INJECTED, NETWORK

QUOTA = "/v2.1/os-quota-sets/project-a"
CLASS = "/v2.1/os-quota-class-sets/default"

REGISTERED = {
    "servers": 4,
    "class:VCPU": 8,
    "class:MEMORY_MB": 4096,
    "server_metadata_items": 2,
    "server_key_pairs": 3,
    "server_groups": 1,
    "server_group_members": 6,
    "server_injected_files": 1,
    "server_injected_file_content_bytes": 100,
    "server_injected_file_path_bytes": 50,
}
PROJECT_LIMITS = {"project-a": {"class:VCPU": 3, "class:MEMORY_MB": 2048}}

#: What project-a's quota set shows, by our names.
SHOWN = {
    "instances": 4,
    "cores": 3,
    "ram": 2048,
    "metadata_items": 2,
    "key_pairs": 3,
    "server_groups": 1,
    "server_group_members": 6,
    "injected_files": 1,
    "injected_file_content_bytes": 100,
    "injected_file_path_bytes": 50,
    "fixed_ips": -1,
    "floating_ips": -1,
    "security_groups": -1,
    "security_group_rules": -1,
}
DEFAULTS = {**SHOWN, "cores": 8, "ram": 4096}


@pytest.fixture
def unified(api: ApiHarness) -> Iterator[ApiHarness]:
    """``api`` with ``[quota] driver = unified_limits`` over Keystone's stand-in."""
    api.conf.set_override("driver", "unified_limits", group="quota")
    quota_conf.register_oslo_limit_opts(api.conf)
    api.conf.set_override("endpoint_id", "resize-sched-endpoint", group="oslo_limit")
    keystone = limit_fixture.LimitFixture(REGISTERED, PROJECT_LIMITS)
    keystone.setUp()
    try:
        yield api
    finally:
        keystone.cleanUp()


def _pick(found: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    return {name: found[name] for name in keys}


@pytest.mark.parametrize(
    ("version", "keys"),
    [("2.1", CORE | INJECTED | NETWORK), ("2.36", CORE | INJECTED), ("2.57", CORE)],
)
def test_quota_sets_show_keystones_limits_at_each_microversion(
    unified: ApiHarness, version: str, keys: set[str]
) -> None:
    unified.server(unified.flavor("small", vcpus=1, memory_mb=512))
    shown = unified.request("GET", QUOTA, token=ALICE, version=version).json["quota_set"]
    assert shown == {"id": "project-a", **_pick(SHOWN, keys)}
    defaults = unified.request("GET", f"{QUOTA}/defaults", token=ALICE, version=version).json
    assert defaults["quota_set"] == {"id": "project-a", **_pick(DEFAULTS, keys)}
    detail = unified.request("GET", f"{QUOTA}/detail", token=ALICE, version=version).json
    assert set(detail["quota_set"]) == keys | {"id"}
    assert detail["quota_set"]["cores"] == {"in_use": 1, "limit": 3, "reserved": 0}
    assert detail["quota_set"]["ram"] == {"in_use": 512, "limit": 2048, "reserved": 0}
    # Another project has no limits of its own: the registered ones.
    theirs = unified.request("GET", "/v2.1/os-quota-sets/project-b", version=version).json
    assert theirs["quota_set"] == {"id": "project-b", **_pick(DEFAULTS, keys)}


@pytest.mark.parametrize(
    ("version", "keys"),
    [
        ("2.1", CORE - {"server_groups", "server_group_members"} | INJECTED | NETWORK),
        ("2.50", CORE | INJECTED),
        ("2.57", CORE),
    ],
)
def test_every_quota_class_shows_the_registered_limits(
    unified: ApiHarness, version: str, keys: set[str]
) -> None:
    for name in ("default", "gold"):
        path = f"/v2.1/os-quota-class-sets/{name}"
        shown = unified.request("GET", path, version=version).json["quota_class_set"]
        assert shown == {"id": name, **_pick(DEFAULTS, keys)}


def test_limits_show_keystones_limits_and_our_usage(unified: ApiHarness) -> None:
    unified.server(unified.flavor("big", vcpus=2, memory_mb=1024))
    absolute = unified.request("GET", "/v2.1/limits", token=ALICE).json["limits"]["absolute"]
    assert (absolute["maxTotalCores"], absolute["totalCoresUsed"]) == (3, 2)
    assert (absolute["maxTotalRAMSize"], absolute["totalRAMUsed"]) == (2048, 1024)
    assert (absolute["maxTotalInstances"], absolute["totalInstancesUsed"]) == (4, 1)
    assert (absolute["maxServerMeta"], absolute["maxTotalKeypairs"]) == (2, 3)
    assert (absolute["maxServerGroups"], absolute["maxServerGroupMembers"]) == (1, 6)
    assert (absolute["maxPersonality"], absolute["maxPersonalitySize"]) == (1, 100)
    assert absolute["maxTotalFloatingIps"] == -1


def test_updates_and_deletes_are_accepted_and_change_nothing(unified: ApiHarness) -> None:
    before = unified.snapshot()
    updated = unified.request("PUT", QUOTA, {"quota_set": {"cores": 50, "force": True}})
    assert updated.status_int == 200
    assert updated.json["quota_set"] == SHOWN
    mine = unified.request("PUT", f"{QUOTA}?user_id=alice", {"quota_set": {"ram": 1}})
    assert (mine.status_int, mine.json["quota_set"]["ram"]) == (200, 2048)
    assert unified.request("DELETE", QUOTA).status_int == 202
    assert unified.request("DELETE", f"{QUOTA}?user_id=alice").status_int == 202
    changed = unified.request("PUT", CLASS, {"quota_class_set": {"cores": 50}}, version="2.57")
    assert changed.status_int == 200
    assert changed.json["quota_class_set"] == _pick(DEFAULTS, CORE)
    assert unified.snapshot() == before
    assert unified.request("GET", QUOTA).json["quota_set"]["cores"] == 3


def test_bad_updates_and_non_admins_are_still_refused(unified: ApiHarness) -> None:
    before = unified.snapshot()
    assert unified.request("PUT", QUOTA, {"quota_set": {"cores": -2}}).status_int == 400
    assert unified.request("PUT", QUOTA, {"quota_set": {"bogus": 1}}).status_int == 400
    assert unified.request("PUT", CLASS, {"quota_class_set": {"cores": -3}}).status_int == 400
    refused = unified.request("PUT", QUOTA, {"quota_set": {"cores": 9}}, token=ALICE)
    assert refused.status_int == 403
    assert unified.request("DELETE", QUOTA, token=ALICE).status_int == 403
    assert unified.snapshot() == before


def _create(api: ApiHarness, flavor: str, **extra: Any) -> Any:
    body = {"server": {"name": "vm", "flavorRef": flavor, **extra}}
    return api.request("POST", "/v2.1/servers", body, token=ALICE)


def test_a_create_past_class_vcpu_is_403_and_creates_nothing(unified: ApiHarness) -> None:
    unified.flavor("small", vcpus=1, memory_mb=512)
    unified.flavor("double", vcpus=2, memory_mb=512)
    unified.flavor("triple", vcpus=3, memory_mb=512)
    assert _create(unified, "small").status_int == 202
    assert unified.next_cast().method == "build_server"
    before = unified.snapshot()
    refused = _create(unified, "triple", metadata={"a": "1"})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 3, but already used 1 of 3 cores"
    )
    assert unified.snapshot() == before
    unified.assert_no_cast()
    # Metadata past the registered server_metadata_items: Nova's 403.
    many = _create(unified, "small", metadata={"a": "1", "b": "2", "c": "3"})
    assert many.status_int == 403
    assert many.json["forbidden"]["message"] == "Maximum number of metadata items exceeds 2"
    assert unified.snapshot() == before
    # Within the limits it goes through.
    assert _create(unified, "double").status_int == 202
    assert unified.next_cast().method == "build_server"


def test_a_resize_past_class_memory_mb_is_403_before_any_migration(unified: ApiHarness) -> None:
    small = unified.flavor("small", vcpus=1, memory_mb=512)
    unified.flavor("wide", vcpus=1, memory_mb=4096)
    unified.flavor("down", vcpus=1, memory_mb=256)
    server = unified.server(small)
    before = unified.snapshot()
    path = f"/v2.1/servers/{server.uuid}/action"
    refused = unified.request("POST", path, {"resize": {"flavorRef": "wide"}}, token=ALICE)
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == (
        "Quota exceeded for ram: Requested 3584, but already used 512 of 2048 ram"
    )
    assert unified.snapshot() == before
    assert unified.db.migration_list(server_uuid=server.uuid) == []
    unified.assert_no_cast()
    accepted = unified.request("POST", path, {"resize": {"flavorRef": "down"}}, token=ALICE)
    assert accepted.status_int == 202
    assert unified.next_cast().method == "resize_server"


def test_a_second_server_group_is_refused_by_the_registered_limit(unified: ApiHarness) -> None:
    body = {"server_group": {"name": "g", "policy": "affinity"}}
    created = unified.request("POST", "/v2.1/os-server-groups", body, token=ALICE, version="2.64")
    assert created.status_int == 200
    before = unified.snapshot()
    refused = unified.request("POST", "/v2.1/os-server-groups", body, token=ALICE, version="2.64")
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == "Quota exceeded, too many server groups."
    assert unified.snapshot() == before


def test_keystone_unreachable_is_a_503_and_nothing_is_created(
    unified: ApiHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    unified.flavor("small", vcpus=1, memory_mb=512)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise limit_exceptions.SessionInitError("Keystone refused the connection")

    monkeypatch.setattr(limit, "_get_keystone_connection", refuse)
    before = unified.snapshot()
    shown = unified.request("GET", QUOTA, token=ADMIN)
    assert shown.status_int == 503
    assert shown.json["serviceUnavailable"]["message"] == (
        "The quota limits could not be read from the identity service (Keystone). Try again later."
    )
    assert _create(unified, "small").status_int == 503
    assert unified.snapshot() == before
    unified.assert_no_cast()


def test_a_recheck_keystone_does_not_answer_leaves_no_server_behind(
    unified: ApiHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    unified.flavor("small", vcpus=1, memory_mb=512)
    real = unified_limits.make_enforcer
    made = []

    def first_only(*args: Any) -> Any:
        # The check before the write reaches Keystone; the recheck after it does not.
        made.append(args)
        if len(made) > 1:
            raise exception.LimitsUnavailable(reason="Keystone stopped answering")
        return real(*args)

    monkeypatch.setattr(unified_limits, "make_enforcer", first_only)
    before = unified.snapshot()
    assert _create(unified, "small").status_int == 503
    assert len(made) == 2
    assert unified.snapshot() == before
    unified.assert_no_cast()


def test_a_revert_that_needs_room_taken_since_is_403(unified: ApiHarness) -> None:
    big = unified.flavor("big", vcpus=2, memory_mb=512)
    small = unified.flavor("small", vcpus=1, memory_mb=512)
    server = unified.server(big)
    unified.verify_resize(server, small)
    # Someone takes the core the revert would need back (project-a: 3 cores).
    unified.server(unified.flavor("double", vcpus=2, memory_mb=512))
    before = unified.snapshot()
    path = f"/v2.1/servers/{server.uuid}/action"
    refused = unified.request("POST", path, {"revertResize": None}, token=ALICE)
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 1, but already used 3 of 3 cores"
    )
    assert unified.snapshot() == before
    unified.assert_no_cast()
