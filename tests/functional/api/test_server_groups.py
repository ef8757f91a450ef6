"""``/v2.1/os-server-groups`` and the ``group`` hint on server create:
Nova's shapes per microversion, scoping, quotas, and every refusal
changing nothing."""

from typing import Any

import pytest

from tests.functional.api.harness import ALICE, BOB, ApiHarness

GROUPS = "/v2.1/os-server-groups"


def _create(
    api: ApiHarness, body: dict[str, Any], *, token: str = ALICE, version: str | None = None
) -> Any:
    return api.request("POST", GROUPS, {"server_group": body}, token=token, version=version)


def _group(api: ApiHarness, policy: str = "affinity", token: str = ALICE) -> str:
    response = _create(api, {"name": "g", "policy": policy}, token=token, version="2.64")
    assert response.status_int == 200, response.text
    return response.json["server_group"]["id"]


def test_create_shapes_follow_the_microversion(api: ApiHarness) -> None:
    old = _create(api, {"name": "web", "policies": ["anti-affinity"]})
    assert old.status_int == 200
    body = old.json["server_group"]
    assert set(body) == {"id", "name", "policies", "members", "metadata"}
    assert (body["name"], body["policies"], body["members"], body["metadata"]) == (
        "web",
        ["anti-affinity"],
        [],
        {},
    )

    v213 = _create(api, {"name": "db", "policies": ["affinity"]}, version="2.13")
    assert v213.json["server_group"]["project_id"] == "project-a"
    assert v213.json["server_group"]["user_id"] == "alice"

    v264 = _create(
        api,
        {"name": "spread", "policy": "anti-affinity", "rules": {"max_server_per_host": 2}},
        version="2.64",
    )
    assert v264.status_int == 200
    body = v264.json["server_group"]
    assert set(body) == {"id", "name", "policy", "rules", "members", "project_id", "user_id"}
    assert (body["policy"], body["rules"]) == ("anti-affinity", {"max_server_per_host": 2})
    stored = api.db.group_get(body["id"], "project-a")
    assert (stored.policy, stored.rules) == ("anti-affinity", {"max_server_per_host": 2})
    # The same group read below 2.64: a list of one, no rules.
    shown = api.request("GET", f"{GROUPS}/{body['id']}", token=ALICE, version="2.63")
    assert shown.json["server_group"]["policies"] == ["anti-affinity"]
    assert "rules" not in shown.json["server_group"]


@pytest.mark.parametrize(
    ("version", "body"),
    [
        (None, {"name": "g", "policies": ["bogus"]}),
        (None, {"name": "g", "policies": ["soft-affinity"]}),  # soft only from 2.15
        (None, {"name": "g", "policies": ["affinity", "anti-affinity"]}),
        (None, {"name": "g", "policies": []}),
        (None, {"name": "g"}),
        (None, {"name": " padded ", "policies": ["affinity"]}),
        ("2.63", {"name": "g", "policy": "affinity"}),
        ("2.64", {"name": "g", "policies": ["affinity"]}),
        ("2.64", {"name": "g", "policy": "bogus"}),
        ("2.64", {"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}),
        (
            "2.64",
            {"name": "g", "policy": "soft-anti-affinity", "rules": {"max_server_per_host": 1}},
        ),
        ("2.64", {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}),
        ("2.64", {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": "x"}}),
        ("2.64", {"name": "g", "policy": "anti-affinity", "rules": {"other": 1}}),
    ],
)
def test_bad_create_is_400_and_changes_nothing(
    api: ApiHarness, version: str | None, body: dict[str, Any]
) -> None:
    before = api.snapshot()
    response = _create(api, body, version=version)
    assert response.status_int == 400, response.text
    assert api.snapshot() == before


def test_rules_on_the_wrong_policy_say_so(api: ApiHarness) -> None:
    response = _create(
        api,
        {"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}},
        version="2.64",
    )
    assert response.json["badRequest"]["message"] == "Only anti-affinity policy supports rules."


def test_soft_policies_from_2_15(api: ApiHarness) -> None:
    response = _create(api, {"name": "g", "policies": ["soft-affinity"]}, version="2.15")
    assert response.status_int == 200
    assert response.json["server_group"]["policies"] == ["soft-affinity"]


def test_projects_see_only_their_own_groups(api: ApiHarness) -> None:
    mine = _group(api, token=ALICE)
    theirs = _group(api, token=BOB)
    listed = api.request("GET", GROUPS, token=ALICE).json["server_groups"]
    assert [g["id"] for g in listed] == [mine]
    # A non-admin's all_projects is ignored (as Nova); an admin's lists all.
    listed = api.request("GET", f"{GROUPS}?all_projects=True", token=ALICE).json
    assert [g["id"] for g in listed["server_groups"]] == [mine]
    listed = api.request("GET", f"{GROUPS}?all_projects=True").json["server_groups"]
    assert [g["id"] for g in listed] == [mine, theirs]
    assert api.request("GET", GROUPS).json["server_groups"] == []
    paged = api.request("GET", f"{GROUPS}?all_projects&limit=1&offset=1").json
    assert [g["id"] for g in paged["server_groups"]] == [theirs]
    assert api.request("GET", f"{GROUPS}?limit=-1", token=ALICE).status_int == 400

    before = api.snapshot()
    assert api.request("GET", f"{GROUPS}/{theirs}", token=ALICE).status_int == 404
    assert api.request("DELETE", f"{GROUPS}/{theirs}", token=ALICE).status_int == 404
    assert api.snapshot() == before
    # An administrator sees and deletes any project's.
    assert api.request("GET", f"{GROUPS}/{theirs}").status_int == 200
    assert api.request("DELETE", f"{GROUPS}/{theirs}").status_int == 204
    assert api.request("GET", f"{GROUPS}/{theirs}").status_int == 404


def test_delete_leaves_the_members_in_no_group(api: ApiHarness) -> None:
    group = _group(api)
    flavor = api.flavor("small")
    server = _boot(api, flavor, group)
    assert api.request("DELETE", f"{GROUPS}/{group}", token=ALICE).status_int == 204
    assert api.db.group_of_server(server) is None
    assert api.db.server_get(server).status == "BUILD"
    assert api.request("DELETE", f"{GROUPS}/{group}", token=ALICE).status_int == 404


def _boot(api: ApiHarness, flavor: Any, group: str, token: str = ALICE) -> str:
    response = api.request(
        "POST",
        "/v2.1/servers",
        {
            "server": {"name": "vm", "flavorRef": flavor.flavorid},
            "os:scheduler_hints": {"group": group},
        },
        token=token,
    )
    assert response.status_int == 202, response.text
    uuid = response.json["server"]["id"]
    assert api.next_cast().kwargs == {"server_uuid": uuid}
    return uuid


def test_group_hint_adds_the_member(api: ApiHarness) -> None:
    group = _group(api)
    flavor = api.flavor("small")
    first = _boot(api, flavor, group)
    second = _boot(api, flavor, group)
    shown = api.request("GET", f"{GROUPS}/{group}", token=ALICE).json["server_group"]
    assert shown["members"] == [first, second]
    assert api.db.request_spec_get(first).scheduler_hints == {"group": group}
    server = api.request("GET", f"/v2.1/servers/{first}", token=ALICE, version="2.71").json
    assert server["server"]["server_groups"] == [group]
    # Not in lists, and not below 2.71 (as Nova).
    detail = api.request("GET", "/v2.1/servers/detail", token=ALICE, version="2.71").json
    assert all("server_groups" not in s for s in detail["servers"])
    # A deleted server leaves its group.
    api.db.server_delete(first)
    assert api.db.group_of_server(first) is None
    shown = api.request("GET", f"{GROUPS}/{group}", token=ALICE).json["server_group"]
    assert shown["members"] == [second]


def test_server_in_no_group_shows_none(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"))
    body = api.request("GET", f"/v2.1/servers/{server.uuid}", token=ALICE, version="2.71").json
    assert body["server"]["server_groups"] == []


@pytest.mark.parametrize("which", ["unknown", "theirs", "not-a-uuid"])
def test_bad_group_hint_is_400_and_records_nothing(api: ApiHarness, which: str) -> None:
    flavor = api.flavor("small")
    group = {
        "unknown": "7b6c3a7e-5b9f-4f41-9d0b-1c2d3e4f5a6b",
        "theirs": _group(api, token=BOB),
        "not-a-uuid": "web",
    }[which]
    before = api.snapshot()
    response = api.request(
        "POST",
        "/v2.1/servers",
        {
            "server": {"name": "vm", "flavorRef": flavor.flavorid},
            "os:scheduler_hints": {"group": group},
        },
        token=ALICE,
    )
    assert response.status_int == 400, response.text
    if which != "not-a-uuid":
        message = response.json["badRequest"]["message"]
        assert message == f"Server group {group} could not be found."
    assert api.snapshot() == before
    api.assert_no_cast()


def test_quotas_of_groups_and_members(api: ApiHarness) -> None:
    api.conf.set_override("server_groups", 1, group="quota")
    api.conf.set_override("server_group_members", 1, group="quota")
    group = _group(api)
    before = api.snapshot()
    refused = _create(api, {"name": "g2", "policies": ["affinity"]})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == "Quota exceeded, too many server groups."
    assert api.snapshot() == before
    # Another project has its own count.
    _group(api, token=BOB)

    flavor = api.flavor("small")
    _boot(api, flavor, group)
    before = api.snapshot()
    response = api.request(
        "POST",
        "/v2.1/servers",
        {
            "server": {"name": "vm", "flavorRef": flavor.flavorid},
            "os:scheduler_hints": {"group": group},
        },
        token=ALICE,
    )
    assert response.status_int == 403
    assert response.json["forbidden"]["message"] == "Quota exceeded, too many servers in group"
    assert api.snapshot() == before
    api.assert_no_cast()
