"""``os-quota-sets``, ``os-quota-class-sets`` and ``/limits``, and quota
enforcement on create, resize and revert, over the API and a real database."""

from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched import actions, exception, quota
from resize_sched.db import models
from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

QUOTA = "/v2.1/os-quota-sets/project-a"
READER = "rita:project-a"

#: The resources each microversion shows in a quota set.
CORE = {
    "instances",
    "cores",
    "ram",
    "metadata_items",
    "key_pairs",
    "server_groups",
    "server_group_members",
}
INJECTED = {"injected_files", "injected_file_content_bytes", "injected_file_path_bytes"}
NETWORK = {"fixed_ips", "floating_ips", "security_groups", "security_group_rules"}


def _put(api: ApiHarness, body: Any, path: str = QUOTA, **kw: Any) -> Any:
    return api.request("PUT", path, {"quota_set": body}, **kw)


@pytest.mark.parametrize(
    ("version", "keys"),
    [
        ("2.1", CORE | INJECTED | NETWORK),
        ("2.35", CORE | INJECTED | NETWORK),
        ("2.36", CORE | INJECTED),
        ("2.57", CORE),
    ],
)
def test_show_defaults_and_detail_follow_the_microversion(
    api: ApiHarness, version: str, keys: set[str]
) -> None:
    shown = api.request("GET", QUOTA, token=ALICE, version=version).json["quota_set"]
    assert set(shown) == keys | {"id"}
    assert (shown["id"], shown["instances"], shown["cores"], shown["ram"]) == (
        "project-a",
        10,
        20,
        51200,
    )
    defaults = api.request("GET", f"{QUOTA}/defaults", token=ALICE, version=version)
    assert defaults.json["quota_set"] == shown
    detail = api.request("GET", f"{QUOTA}/detail", token=ALICE, version=version).json
    assert set(detail["quota_set"]) == keys | {"id"}
    assert detail["quota_set"]["cores"] == {"in_use": 0, "limit": 20, "reserved": 0}


def test_detail_counts_servers_at_their_flavor(api: ApiHarness) -> None:
    flavor = api.flavor("big", vcpus=3, memory_mb=1024)
    api.server(flavor)
    api.server(flavor, user_id="carol")
    api.server(flavor, project_id="project-b", user_id="bob")
    detail = api.request("GET", f"{QUOTA}/detail", token=ALICE).json["quota_set"]
    assert detail["instances"]["in_use"] == 2
    assert detail["cores"]["in_use"] == 6
    assert detail["ram"]["in_use"] == 2048
    mine = api.request("GET", f"{QUOTA}/detail?user_id=alice", token=ADMIN).json["quota_set"]
    assert (mine["instances"]["in_use"], mine["cores"]["in_use"]) == (1, 3)


def test_update_sets_limits_and_delete_restores_the_defaults(api: ApiHarness) -> None:
    response = _put(api, {"cores": "5", "ram": 2048, "instances": -1})
    assert response.status_int == 200
    body = response.json["quota_set"]
    assert "id" not in body
    assert (body["cores"], body["ram"], body["instances"]) == (5, 2048, -1)
    assert api.request("GET", QUOTA, token=ALICE).json["quota_set"]["cores"] == 5
    # Another project keeps the defaults.
    other = api.request("GET", "/v2.1/os-quota-sets/project-b", token=BOB).json["quota_set"]
    assert other["cores"] == 20

    user = _put(api, {"cores": 2}, path=f"{QUOTA}?user_id=alice").json["quota_set"]
    assert (user["cores"], user["ram"]) == (2, 2048)
    assert api.request("GET", f"{QUOTA}?user_id=alice").json["quota_set"]["cores"] == 2
    assert api.request("GET", QUOTA).json["quota_set"]["cores"] == 5

    assert api.request("DELETE", f"{QUOTA}?user_id=alice").status_int == 202
    assert api.request("GET", f"{QUOTA}?user_id=alice").json["quota_set"]["cores"] == 5
    assert api.request("DELETE", QUOTA).status_int == 202
    assert api.request("GET", QUOTA).json["quota_set"]["cores"] == 20


def test_update_below_usage_needs_force(api: ApiHarness) -> None:
    flavor = api.flavor("big", vcpus=4, memory_mb=1024)
    api.server(flavor)
    before = api.snapshot()
    refused = _put(api, {"ram": 4096, "cores": 3})
    assert refused.status_int == 400
    assert refused.json["badRequest"]["message"] == (
        "Quota limit 3 for cores must be greater than or equal to already used and reserved 4."
    )
    assert api.snapshot() == before
    forced = _put(api, {"ram": 4096, "cores": 3, "force": "True"})
    assert forced.status_int == 200
    assert forced.json["quota_set"]["cores"] == 3


def test_a_user_limit_may_not_pass_the_projects(api: ApiHarness) -> None:
    _put(api, {"cores": 4})
    before = api.snapshot()
    refused = _put(api, {"cores": 5}, path=f"{QUOTA}?user_id=alice")
    assert refused.status_int == 400
    assert "must be less than or equal to 4" in refused.json["badRequest"]["message"]
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("body", "version"),
    [
        ({"cores": -2}, None),
        ({"cores": "-5"}, None),
        ({"cores": "many"}, None),
        ({"cores": 1.5}, None),
        ({"cores": 2**31}, None),
        ({"cores": True}, None),
        ({"bogus": 1}, None),
        ({"force": "maybe"}, None),
        ({"floating_ips": 10}, "2.36"),
        ({"injected_files": 3}, "2.57"),
        ({"cores": 5, "ram": -7}, None),
    ],
)
def test_update_refuses_bad_input_and_changes_nothing(
    api: ApiHarness, body: Any, version: str | None
) -> None:
    before = api.snapshot()
    response = _put(api, body, version=version)
    assert response.status_int == 400, response.json
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", QUOTA, {"quota_set": {"cores": 50}}),
        ("DELETE", QUOTA, None),
        ("GET", "/v2.1/os-quota-sets/project-b", None),
        ("GET", "/v2.1/os-quota-sets/project-b/detail", None),
        ("GET", "/v2.1/os-quota-class-sets/default", None),
        ("PUT", "/v2.1/os-quota-class-sets/default", {"quota_class_set": {"cores": 50}}),
        ("GET", "/v2.1/limits?tenant_id=project-b", None),
    ],
)
def test_non_admins_are_refused_and_nothing_changes(
    api: ApiHarness, method: str, path: str, body: Any
) -> None:
    before = api.snapshot()
    response = api.request(method, path, body, token=ALICE)
    assert response.status_int == 403
    assert api.snapshot() == before


def test_a_reader_sees_its_quota(api: ApiHarness) -> None:
    assert api.request("GET", QUOTA, token=READER).status_int == 200
    assert api.request("GET", f"{QUOTA}/detail", token=READER).status_int == 200


@pytest.mark.parametrize(
    ("version", "keys"),
    [
        ("2.1", CORE - {"server_groups", "server_group_members"} | INJECTED | NETWORK),
        ("2.50", CORE | INJECTED),
        ("2.57", CORE),
    ],
)
def test_quota_class_show_and_update(api: ApiHarness, version: str, keys: set[str]) -> None:
    path = "/v2.1/os-quota-class-sets/default"
    shown = api.request("GET", path, version=version).json["quota_class_set"]
    assert set(shown) == keys | {"id"}
    assert shown.pop("id") == "default"
    wanted = {name: value + 100 for name, value in shown.items()}
    updated = api.request("PUT", path, {"quota_class_set": wanted}, version=version)
    assert updated.status_int == 200
    assert updated.json["quota_class_set"] == wanted
    assert api.request("GET", path, version=version).json["quota_class_set"] == {
        "id": "default",
        **wanted,
    }
    # The default class is every project's default.
    assert api.request("GET", f"{QUOTA}/defaults").json["quota_set"]["cores"] == 120
    assert api.request("GET", QUOTA).json["quota_set"]["cores"] == 120


def test_quota_class_refuses_bad_input(api: ApiHarness) -> None:
    path = "/v2.1/os-quota-class-sets/default"
    before = api.snapshot()
    for body, version in (
        ({"quota_class_set": {"cores": -3}}, None),
        ({"quota_class_set": {"bogus": 1}}, None),
        ({"quota_class_set": {"fixed_ips": 1}}, "2.50"),
        ({"quota_set": {"cores": 1}}, None),
    ):
        assert api.request("PUT", path, body, version=version).status_int == 400, body
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("version", "absent", "present"),
    [
        ("2.1", set(), {"maxTotalFloatingIps", "maxImageMeta", "maxPersonality"}),
        ("2.36", {"maxTotalFloatingIps", "maxSecurityGroups"}, {"maxImageMeta"}),
        ("2.39", {"maxImageMeta"}, {"maxPersonality"}),
        ("2.57", {"maxPersonality", "maxPersonalitySize"}, {"maxServerMeta"}),
    ],
)
def test_limits_show_limits_and_usage(
    api: ApiHarness, version: str, absent: set[str], present: set[str]
) -> None:
    api.server(api.flavor("big", vcpus=2, memory_mb=1024))
    _put(api, {"cores": 8, "key_pairs": 3})
    limits = api.request("GET", "/v2.1/limits", token=ALICE, version=version).json["limits"]
    absolute = limits["absolute"]
    assert limits["rate"] == []
    assert not absent & set(absolute)
    assert present <= set(absolute)
    assert (absolute["maxTotalCores"], absolute["totalCoresUsed"]) == (8, 2)
    assert (absolute["maxTotalRAMSize"], absolute["totalRAMUsed"]) == (51200, 1024)
    assert (absolute["maxTotalInstances"], absolute["totalInstancesUsed"]) == (10, 1)
    assert absolute["maxTotalKeypairs"] == 3
    assert absolute["maxServerMeta"] == 128
    assert (absolute["maxServerGroups"], absolute["maxServerGroupMembers"]) == (10, 10)
    # An administrator asks for another project's.
    theirs = api.request("GET", "/v2.1/limits?tenant_id=project-b", version=version).json
    assert theirs["limits"]["absolute"]["totalCoresUsed"] == 0


# -- enforcement ------------------------------------------------------------------------


def _create(api: ApiHarness, flavor: str = "small", token: str = ALICE, **extra: Any) -> Any:
    body = {"server": {"name": "vm", "flavorRef": flavor, **extra}}
    return api.request("POST", "/v2.1/servers", body, token=token)


@pytest.mark.parametrize(
    ("limits", "resource"),
    [({"instances": 1}, "instances"), ({"cores": 2}, "cores"), ({"ram": 1000}, "ram")],
)
def test_create_over_quota_is_403_and_creates_nothing(
    api: ApiHarness, limits: dict[str, int], resource: str
) -> None:
    api.flavor("small", vcpus=1, memory_mb=512)
    api.flavor("double", vcpus=2, memory_mb=600)
    _put(api, limits)
    assert _create(api).status_int == 202
    assert api.next_cast().method == "build_server"
    before = api.snapshot()
    refused = _create(api, "double")
    assert refused.status_int == 403
    message = refused.json["forbidden"]["message"]
    assert message.startswith(f"Quota exceeded for {resource}: Requested ")
    assert message.endswith(f" {resource}")
    assert api.snapshot() == before
    api.assert_no_cast()
    # Another project is not held back.
    assert _create(api, token=BOB).status_int == 202
    assert api.next_cast().method == "build_server"


def test_a_user_quota_limits_that_user_only(api: ApiHarness) -> None:
    api.flavor("small")
    _put(api, {"instances": 0}, path=f"{QUOTA}?user_id=alice")
    assert _create(api).status_int == 403
    assert _create(api, token="carol:project-a").status_int == 202
    assert api.next_cast().method == "build_server"


def test_the_recheck_refuses_the_create_that_lost_a_race(api: ApiHarness) -> None:
    """Two creates both pass the first count; the recheck refuses the later write."""
    flavor = api.flavor("small")
    api.db.quota_set_limits("project-a", {"instances": 1})
    real = api.db.server_create
    raced: list[bool] = []

    def racing_create(**kwargs: Any) -> Any:
        if not raced:
            raced.append(True)
            # The other request's whole create lands between our check and write.
            actions.create_server(
                api.db,
                name="winner",
                flavorid="small",
                project_id="project-a",
                user_id="alice",
                quota_conf=api.conf,
            )
        return real(**kwargs)

    api.db.server_create = racing_create  # type: ignore[method-assign]
    with pytest.raises(exception.OverQuota):
        actions.create_server(
            api.db,
            name="loser",
            flavorid=flavor.flavorid,
            project_id="project-a",
            user_id="alice",
            quota_conf=api.conf,
        )
    servers = api.db.server_list("project-a")
    assert [s.name for s in servers] == ["winner"]
    assert [s.server_uuid for s in _request_specs(api)] == [servers[0].uuid]


def _request_specs(api: ApiHarness) -> list[Any]:
    with api.db.engine.connect() as conn:
        return list(conn.execute(sa.select(models.RequestSpec)))


def test_metadata_uses_the_metadata_items_quota(api: ApiHarness) -> None:
    api.flavor("small")
    _put(api, {"metadata_items": 2})
    before = api.snapshot()
    refused = _create(api, metadata={"a": "1", "b": "2", "c": "3"})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == "Maximum number of metadata items exceeds 2"
    assert api.snapshot() == before
    assert _create(api, metadata={"a": "1", "b": "2"}).status_int == 202
    assert api.next_cast().method == "build_server"


def test_the_noop_driver_enforces_nothing(api: ApiHarness) -> None:
    api.flavor("small")
    _put(api, {"instances": 0})
    api.conf.set_override("driver", "noop", group="quota")
    assert _create(api).status_int == 202
    assert api.next_cast().method == "build_server"


def _action(api: ApiHarness, server: Any, body: Any) -> Any:
    return api.request("POST", f"/v2.1/servers/{server.uuid}/action", body, token=ALICE)


@pytest.mark.parametrize(("limits", "resource"), [({"cores": 3}, "cores"), ({"ram": 1500}, "ram")])
def test_resize_over_quota_is_403_before_any_migration(
    api: ApiHarness, limits: dict[str, int], resource: str
) -> None:
    small = api.flavor("small", vcpus=1, memory_mb=512)
    api.flavor("big", vcpus=4, memory_mb=2048)
    api.flavor("medium", vcpus=2, memory_mb=1024)
    server = api.server(small)
    _put(api, limits)
    before = api.snapshot()
    refused = _action(api, server, {"resize": {"flavorRef": "big"}})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"].startswith(f"Quota exceeded for {resource}:")
    assert api.snapshot() == before
    assert api.db.migration_list(server_uuid=server.uuid) == []
    api.assert_no_cast()
    # What fits in the limit still resizes.
    assert _action(api, server, {"resize": {"flavorRef": "medium"}}).status_int == 202
    assert api.next_cast().method == "resize_server"


def test_usage_through_a_resize_confirmed_and_reverted(api: ApiHarness) -> None:
    """As Nova counts from the database: the new flavor from VERIFY_RESIZE on;
    a revert gives the old one back and is checked when the old one is larger."""
    big = api.flavor("big", vcpus=4, memory_mb=2048)
    small = api.flavor("small", vcpus=1, memory_mb=512)
    resized = api.server(big)
    api.verify_resize(resized, small)
    used = quota.usage(api.db, "project-a")
    assert (used["cores"], used["ram"]) == (1, 512)

    # Someone else takes the room the revert would need back.
    other = api.server(api.flavor("mid", vcpus=2, memory_mb=512))
    _put(api, {"cores": 5, "force": True})
    before = api.snapshot()
    refused = _action(api, resized, {"revertResize": None})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 3, but already used 3 of 5 cores"
    )
    assert api.snapshot() == before
    api.assert_no_cast()

    # With room again the revert is accepted; once done it counts the old flavor.
    api.db.server_delete(other.uuid)
    assert _action(api, resized, {"revertResize": None}).status_int == 202
    assert api.next_cast().method == "revert_resize"
    api.db.server_update(resized.uuid, status="ACTIVE", task_state=None, flavor=big.to_snapshot())
    assert quota.usage(api.db, "project-a")["cores"] == 4

    # A confirm of a resize up keeps counting the new flavor.
    up = api.server(small)
    api.verify_resize(up, api.flavor("up", vcpus=1, memory_mb=1024))
    assert quota.usage(api.db, "project-a")["ram"] == 2048 + 1024
    assert _action(api, up, {"confirmResize": None}).status_int == 204
    assert api.next_cast().method == "confirm_resize"
    assert quota.usage(api.db, "project-a")["ram"] == 2048 + 1024
