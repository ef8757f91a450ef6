"""``os:scheduler_hints`` at create: what Nova accepts is stored in the
request spec; a malformed hint is a 400 that records and casts nothing."""

from typing import Any

import pytest

from tests.functional.api.harness import ALICE, ApiHarness

S1 = "8c1c5e2a-3f7e-4b7a-9a57-6c3c0e0f1a01"
S2 = "8c1c5e2a-3f7e-4b7a-9a57-6c3c0e0f1a02"


def _create(api: ApiHarness, hints: Any, key: str = "os:scheduler_hints") -> Any:
    body = {"server": {"name": "web", "flavorRef": "small"}, key: hints}
    return api.request("POST", "/v2.1/servers", body, token=ALICE)


@pytest.mark.parametrize(
    "hints",
    [
        {},
        {"same_host": S1},
        {"same_host": [S1, S2]},
        {"different_host": S1},
        {"different_host": [S1, S2.replace("-", "")]},
        # NOTE: a group hint naming a group is stored too, but the group must
        # exist (tests/functional/api/test_server_groups.py).
        {"same_host": [S1], "different_host": S2},
        {"query": '[">=", "$free_ram_mb", 1024]', "cidr": "/24", "target_cell": "c1"},
        {"build_near_host_ip": "10.0.0.1", "some_hint_of_a_custom_filter": {"any": 1}},
        # NOTE: as Nova's schema: one same_host string is not checked for its
        # format (only a list's items are); it matches no server.
        {"same_host": "not-a-uuid"},
    ],
)
@pytest.mark.parametrize("key", ["os:scheduler_hints", "OS-SCH-HNT:scheduler_hints"])
def test_hints_nova_accepts_are_stored(api: ApiHarness, hints: dict, key: str) -> None:
    api.flavor("small")
    response = _create(api, hints, key)
    assert response.status_int == 202, response.json
    spec = api.db.request_spec_get(response.json["server"]["id"])
    assert spec.scheduler_hints == hints
    assert api.next_cast().method == "build_server"


@pytest.mark.parametrize(
    "hints, field",
    [
        ({"same_host": [S1, "nope"]}, "same_host"),
        ({"same_host": 5}, "same_host"),
        ({"different_host": "x"}, "different_host"),
        ({"different_host": [S1, 7]}, "different_host"),
        ({"different_host": {"a": S1}}, "different_host"),
        ({"group": "x"}, "group"),
        ({"group": 12}, "group"),
        ({"cidr": "10.0.0.0/24"}, "cidr"),
        ({"build_near_host_ip": "near"}, "build_near_host_ip"),
        ({"query": 3}, "query"),
    ],
)
def test_malformed_hints_are_refused_and_change_nothing(
    api: ApiHarness, hints: dict, field: str
) -> None:
    api.flavor("small")
    before = api.snapshot()
    response = _create(api, hints)
    assert response.status_int == 400, response.json
    assert field in response.json["badRequest"]["message"]
    assert api.snapshot() == before
    api.assert_no_cast()


def test_hints_must_be_an_object(api: ApiHarness) -> None:
    api.flavor("small")
    before = api.snapshot()
    assert _create(api, [S1]).status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()
