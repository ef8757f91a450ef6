"""Multiple create at the API: ``min_count``, ``max_count`` and
``return_reservation_id`` on ``POST /servers``, the quota deciding how many
(as Nova's), the reservation id on each server and as a list filter."""

from typing import Any

import pytest

from resize_sched import quota
from tests.functional.api.harness import ADMIN, ALICE, ApiHarness

QUOTA = "/v2.1/os-quota-sets/project-a"


def _create(api: ApiHarness, **server: Any) -> Any:
    body = {"server": {"name": "web", "flavorRef": "small", **server}}
    return api.request("POST", "/v2.1/servers", body, token=ALICE)


def _casts(api: ApiHarness, count: int) -> list[str]:
    casts = [api.next_cast() for _ in range(count)]
    assert {c.method for c in casts} == {"build_server"}
    api.assert_no_cast()
    return [c.kwargs["server_uuid"] for c in casts]


def _listed(api: ApiHarness, query: str, version: str = "2.3") -> list[dict[str, Any]]:
    response = api.request("GET", f"/v2.1/servers/detail?{query}", token=ADMIN, version=version)
    assert response.status_int == 200, response.json
    return response.json["servers"]


def test_max_count_servers_share_a_reservation(api: ApiHarness) -> None:
    api.flavor("small")
    response = _create(api, min_count=2, max_count="3", return_reservation_id="true")
    assert response.status_int == 202, response.json
    assert set(response.json) == {"reservation_id"}
    reservation = response.json["reservation_id"]
    assert reservation.startswith("r-") and len(reservation) == 10
    built = _casts(api, 3)
    servers = [api.db.server_get(uuid) for uuid in built]
    assert [(s.name, s.launch_index) for s in servers] == [
        ("web-1", 0),
        ("web-2", 1),
        ("web-3", 2),
    ]
    assert {s.reservation_id for s in servers} == {reservation}
    listed = _listed(api, f"all_tenants=1&reservation_id={reservation}")
    assert sorted(s["id"] for s in listed) == sorted(built)
    assert {s["OS-EXT-SRV-ATTR:reservation_id"] for s in listed} == {reservation}
    assert sorted(s["OS-EXT-SRV-ATTR:launch_index"] for s in listed) == [0, 1, 2]
    # NOTE: the attribute from 2.3, as Nova; the owner may filter too.
    assert all("OS-EXT-SRV-ATTR:reservation_id" not in s for s in _listed(api, "", "2.1"))
    mine = api.request("GET", f"/v2.1/servers?reservation_id={reservation}", token=ALICE)
    assert sorted(s["id"] for s in mine.json["servers"]) == sorted(built)
    assert _listed(api, "all_tenants=1&reservation_id=r-00000000") == []


def test_without_return_reservation_id_the_first_server(api: ApiHarness) -> None:
    api.flavor("small")
    response = _create(api, min_count=2)
    assert response.status_int == 202, response.json
    built = _casts(api, 2)
    assert response.json["server"]["id"] == built[0]
    assert response.location.endswith(f"/servers/{built[0]}")
    first, second = (api.db.server_get(uuid) for uuid in built)
    assert first.reservation_id == second.reservation_id
    # NOTE: one server alone keeps its name, and a reservation of its own.
    alone = _create(api, return_reservation_id=False).json["server"]["id"]
    (cast,) = _casts(api, 1)
    assert cast == alone
    row = api.db.server_get(alone)
    assert row.name == "web"
    assert row.reservation_id not in (None, first.reservation_id)


def test_the_quota_allows_fewer_than_max_count(api: ApiHarness) -> None:
    api.flavor("small", vcpus=2, memory_mb=512)
    assert api.request("PUT", QUOTA, {"quota_set": {"cores": 7}}).status_int == 200
    response = _create(api, min_count=2, max_count=5, return_reservation_id=True)
    assert response.status_int == 202, response.json
    built = _casts(api, 3)
    assert [api.db.server_get(u).name for u in built] == ["web-1", "web-2", "web-3"]
    detail = api.request("GET", f"{QUOTA}/detail", token=ALICE).json["quota_set"]
    assert detail["cores"]["in_use"] == 6
    assert detail["instances"]["in_use"] == 3


@pytest.mark.parametrize(
    ("limits", "counts", "message"),
    [
        (
            {"instances": 3},
            {"min_count": 4, "max_count": 6},
            "Quota exceeded for instances: Requested 4-6, but already used 0 of 3 instances",
        ),
        (
            {"instances": 1},
            {"min_count": 2},
            "Quota exceeded for instances: Requested 2, but already used 0 of 1 instances",
        ),
        (
            {"cores": 3},
            {"min_count": 2, "max_count": 3},
            "Quota exceeded for cores: Requested 6, but already used 0 of 3 cores",
        ),
    ],
)
def test_below_min_count_is_403_and_creates_nothing(
    api: ApiHarness, limits: dict[str, int], counts: dict[str, int], message: str
) -> None:
    api.flavor("small", vcpus=2, memory_mb=512)
    assert api.request("PUT", QUOTA, {"quota_set": limits}).status_int == 200
    before = api.snapshot()
    response = _create(api, **counts)
    assert response.status_int == 403, response.json
    assert response.json["forbidden"]["message"] == message
    assert api.snapshot() == before
    api.assert_no_cast()


def test_min_count_above_max_count_is_400(api: ApiHarness) -> None:
    api.flavor("small")
    before = api.snapshot()
    response = _create(api, min_count=3, max_count=2)
    assert response.status_int == 400
    assert response.json["badRequest"]["message"] == "min_count must be <= max_count"
    assert _create(api, return_reservation_id="perhaps").status_int == 400
    assert _create(api, min_count="two").status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()


def test_the_group_must_have_room_for_every_member(api: ApiHarness) -> None:
    api.flavor("small")
    assert api.request("PUT", QUOTA, {"quota_set": {"server_group_members": 2}}).status_int == 200
    group = api.request(
        "POST",
        "/v2.1/os-server-groups",
        {"server_group": {"name": "g", "policies": ["anti-affinity"]}},
        token=ALICE,
    ).json["server_group"]["id"]
    before = api.snapshot()
    body = {
        "server": {"name": "web", "flavorRef": "small", "min_count": 3},
        "os:scheduler_hints": {"group": group},
    }
    response = api.request("POST", "/v2.1/servers", body, token=ALICE)
    assert response.status_int == 403
    assert response.json["forbidden"]["message"] == "Quota exceeded, too many servers in group"
    assert api.snapshot() == before
    api.assert_no_cast()
    body["server"]["min_count"] = 2
    assert api.request("POST", "/v2.1/servers", body, token=ALICE).status_int == 202
    built = _casts(api, 2)
    assert {api.db.group_of_server(u).uuid for u in built} == {group}


def test_the_name_template_is_an_option(api: ApiHarness) -> None:
    api.flavor("small")
    api.conf.set_override("multi_instance_display_name_template", "%(name)s.%(uuid)s")
    assert _create(api, min_count=2).status_int == 202
    built = _casts(api, 2)
    assert [api.db.server_get(u).name for u in built] == [f"web.{u}" for u in built]
    api.conf.set_override("multi_instance_display_name_template", "%(nope)s")
    assert _create(api, min_count=2).status_int == 202
    assert [api.db.server_get(u).name for u in _casts(api, 2)] == ["web", "web"]


@pytest.mark.parametrize(("min_count", "kept"), [(3, 0), (2, 2)])
def test_a_racing_create_between_the_count_and_a_recheck(
    api: ApiHarness, monkeypatch: pytest.MonkeyPatch, min_count: int, kept: int
) -> None:
    """The count saw room for 3, then another create took the last: the
    third server's own check refuses it. At least min_count recorded: they
    stay and are built; fewer: they are deleted, and the answer is 403."""
    api.flavor("small")
    assert api.request("PUT", QUOTA, {"quota_set": {"instances": 2}}).status_int == 200
    monkeypatch.setattr(quota, "servers_that_fit", lambda *args: 3)
    response = _create(api, min_count=min_count, max_count=3, return_reservation_id=True)
    listed = _listed(api, "all_tenants=1")
    if kept:
        assert response.status_int == 202, response.json
        built = _casts(api, kept)
        assert sorted(s["id"] for s in listed) == sorted(built)
        assert {s["OS-EXT-SRV-ATTR:reservation_id"] for s in listed} == {
            response.json["reservation_id"]
        }
        return
    assert response.status_int == 403, response.json
    assert response.json["forbidden"]["message"] == (
        "Quota exceeded for instances: Requested 1, but already used 2 of 2 instances"
    )
    casts = [api.next_cast() for _ in range(2)]
    api.assert_no_cast()
    assert {c.method for c in casts} == {"delete_server"}
    withdrawn = {c.kwargs["server_uuid"] for c in casts}
    assert {s["id"] for s in listed} == withdrawn
    assert {s["OS-EXT-STS:task_state"] for s in listed} == {"deleting"}
