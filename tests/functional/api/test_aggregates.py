"""``/v2.1/os-aggregates`` and ``/v2.1/os-availability-zone`` over the real Placement.

Compute hosts are providers made in Placement whose reports go through the
conductor's report code, as a compute service's would. Every refused
request is checked to leave the database (every table) and the providers'
aggregates in Placement exactly as they were.
"""

import uuid
from collections.abc import Callable
from typing import Any

from resize_sched.placement.client import PlacementClient
from tests.functional.api.harness import ALICE, ApiHarness

AGG = "/v2.1/os-aggregates"
FOREIGN = str(uuid.uuid4())


def _call(cloud: ApiHarness, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    kw.setdefault("version", "2.41")
    return cloud.request(method, path, body, **kw)


def _create(cloud: ApiHarness, name: str, zone: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if zone is not None:
        body["availability_zone"] = zone
    response = _call(cloud, "POST", AGG, {"aggregate": body})
    assert response.status_int == 200, response.json
    return response.json["aggregate"]


def _action(cloud: ApiHarness, agg_id: int, body: Any, **kw: Any) -> Any:
    return _call(cloud, "POST", f"{AGG}/{agg_id}/action", body, **kw)


def _add(cloud: ApiHarness, agg_id: int, host: str) -> dict[str, Any]:
    response = _action(cloud, agg_id, {"add_host": {"host": host}})
    assert response.status_int == 200, response.json
    return response.json["aggregate"]


def _placement_aggregates(client: PlacementClient, *rps: str) -> list[frozenset[str]]:
    return [client.get_aggregates(rp)[0] for rp in rps]


def test_lifecycle_as_nova_shows_it(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    created = _create(cloud, "rack1", "az1")
    assert set(created) == {
        "availability_zone",
        "created_at",
        "deleted",
        "deleted_at",
        "id",
        "name",
        "updated_at",
        "uuid",
    }
    assert (created["name"], created["availability_zone"], created["deleted"]) == (
        "rack1",
        "az1",
        False,
    )
    uuid.UUID(created["uuid"])
    agg_id = created["id"]
    shown = _call(cloud, "GET", f"{AGG}/{agg_id}").json["aggregate"]
    assert (shown["hosts"], shown["metadata"]) == ([], {"availability_zone": "az1"})
    before_241 = _call(cloud, "GET", f"{AGG}/{agg_id}", version="2.40").json["aggregate"]
    assert "uuid" not in before_241
    assert _call(cloud, "GET", AGG).json["aggregates"] == [shown]

    added = _add(cloud, agg_id, "h1")
    assert added["hosts"] == ["h1"]
    updated = _call(cloud, "PUT", f"{AGG}/{agg_id}", {"aggregate": {"name": "rack-1"}})
    assert updated.status_int == 200, updated.json
    assert (updated.json["aggregate"]["name"], updated.json["aggregate"]["hosts"]) == (
        "rack-1",
        ["h1"],
    )
    meta = _action(cloud, agg_id, {"set_metadata": {"metadata": {"ssd": "true", "x": None}}})
    assert meta.json["aggregate"]["metadata"] == {"availability_zone": "az1", "ssd": "true"}
    meta = _action(cloud, agg_id, {"set_metadata": {"metadata": {"ssd": None}}})
    assert meta.json["aggregate"]["metadata"] == {"availability_zone": "az1"}
    removed = _action(cloud, agg_id, {"remove_host": {"host": "h1"}})
    assert removed.json["aggregate"]["hosts"] == []
    # the zone can change once no host holds a server
    rezoned = _call(cloud, "PUT", f"{AGG}/{agg_id}", {"aggregate": {"availability_zone": "az9"}})
    assert rezoned.json["aggregate"]["availability_zone"] == "az9"
    deleted = _call(cloud, "DELETE", f"{AGG}/{agg_id}")
    assert (deleted.status_int, deleted.body) == (200, b"")
    assert _call(cloud, "GET", f"{AGG}/{agg_id}").status_int == 404
    assert _call(cloud, "GET", AGG).json == {"aggregates": []}


def test_hosts_mirrored_into_placement_keeping_other_aggregates(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    h1, h2 = register("h1"), register("h2")
    _current, generation = placement_client.get_aggregates(h1)
    placement_client.set_aggregates(h1, [FOREIGN], generation)
    first = _create(cloud, "first", "az1")
    second = _create(cloud, "second")
    _add(cloud, first["id"], "h1")
    _add(cloud, second["id"], "h1")
    _add(cloud, second["id"], "h2")
    assert _placement_aggregates(placement_client, h1, h2) == [
        {FOREIGN, first["uuid"], second["uuid"]},
        {second["uuid"]},
    ]
    _action(cloud, second["id"], {"remove_host": {"host": "h1"}})
    assert _placement_aggregates(placement_client, h1, h2) == [
        {FOREIGN, first["uuid"]},
        {second["uuid"]},
    ]
    _action(cloud, first["id"], {"remove_host": {"host": "h1"}})
    assert _placement_aggregates(placement_client, h1) == [{FOREIGN}]


def _refusals(cloud: ApiHarness, ids: dict[str, int]) -> list[tuple[str, str, Any, int, str, str]]:
    """(method, path, body, status, message part, token) of each bad request."""
    zoned, plain, other = f"{AGG}/{ids['zoned']}", f"{AGG}/{ids['plain']}", f"{AGG}/{ids['other']}"
    admin = "admin:admin"
    return [
        ("POST", AGG, {"aggregate": {}}, 400, "'name' is a required property", admin),
        ("POST", AGG, {"aggregate": {"name": ""}}, 400, "name", admin),
        ("POST", AGG, {"aggregate": {"name": "x" * 256}}, 400, "name", admin),
        ("POST", AGG, {"aggregate": {"name": " lead"}}, 400, "name", admin),
        ("POST", AGG, {"aggregate": {"name": "n", "colour": 1}}, 400, "colour", admin),
        ("POST", AGG, {"aggregate": {"name": "n", "availability_zone": "a:b"}}, 400, "a:b", admin),
        ("POST", AGG, {"aggregate": {"name": "n", "availability_zone": ""}}, 400, "", admin),
        ("POST", AGG, {"name": "n"}, 400, "aggregate", admin),
        (
            "POST",
            AGG,
            {"aggregate": {"name": "zoned"}},
            409,
            "Aggregate zoned already exists",
            admin,
        ),
        ("POST", AGG, {"aggregate": {"name": "n"}}, 403, "", ALICE),
        ("GET", AGG, None, 403, "", ALICE),
        ("GET", f"{AGG}/999999", None, 404, "Aggregate 999999 could not be found", admin),
        ("GET", f"{AGG}/abc", None, 404, "Aggregate abc could not be found", admin),
        ("DELETE", f"{AGG}/-1", None, 404, "Aggregate -1 could not be found", admin),
        ("GET", zoned, None, 403, "", ALICE),
        ("PUT", zoned, {"aggregate": {}}, 400, "", admin),
        ("PUT", zoned, {"aggregate": {"name": "plain"}}, 409, "already exists", admin),
        ("PUT", f"{AGG}/999999", {"aggregate": {"name": "q"}}, 404, "could not be found", admin),
        ("PUT", zoned, {"aggregate": {"name": "q"}}, 403, "", ALICE),
        # h2 is in "other" (az2): plain may not become az3
        (
            "PUT",
            plain,
            {"aggregate": {"availability_zone": "az3"}},
            400,
            "One or more hosts already in availability zone(s) ['az2']",
            admin,
        ),
        # h1 holds a server: its zone cannot change under it
        (
            "PUT",
            zoned,
            {"aggregate": {"availability_zone": "az9"}},
            400,
            "One or more hosts contain instances in this zone",
            admin,
        ),
        (
            "POST",
            f"{plain}/action",
            {"set_metadata": {"metadata": {"availability_zone": "az3"}}},
            400,
            "Cannot update metadata of aggregate",
            admin,
        ),
        ("POST", f"{plain}/action", {"set_metadata": {"metadata": {"b@d": "1"}}}, 400, "", admin),
        (
            "POST",
            f"{plain}/action",
            {"set_metadata": {"metadata": {"k": "v" * 256}}},
            400,
            "",
            admin,
        ),
        ("POST", f"{plain}/action", {"add_host": {"host": "nohost"}}, 404, "nohost", admin),
        ("POST", f"{zoned}/action", {"add_host": {"host": "h1"}}, 409, "already has host", admin),
        # h2 is in az2 already
        (
            "POST",
            f"{zoned}/action",
            {"add_host": {"host": "h2"}},
            409,
            "Cannot add host to aggregate",
            admin,
        ),
        ("POST", f"{AGG}/999999/action", {"add_host": {"host": "h1"}}, 404, "", admin),
        ("POST", f"{plain}/action", {"remove_host": {"host": "h1"}}, 404, "Cannot remove", admin),
        ("POST", f"{plain}/action", {"add_host": {}}, 400, "host", admin),
        ("POST", f"{plain}/action", {"explode": {}}, 400, "explode", admin),
        (
            "POST",
            f"{plain}/action",
            {"add_host": {"host": "h1"}, "remove_host": {"host": "h1"}},
            400,
            "",
            admin,
        ),
        ("POST", f"{plain}/action", {"add_host": {"host": "h3"}}, 403, "", ALICE),
        ("DELETE", zoned, None, 400, "Host aggregate is not empty", admin),
        ("DELETE", other, None, 400, "Cannot remove aggregate", admin),
        ("DELETE", f"{AGG}/999999", None, 404, "", admin),
        ("DELETE", plain, None, 403, "", ALICE),
    ]


def test_bad_requests_are_refused_and_change_nothing(
    cloud: ApiHarness, register: Callable[..., str], placement_client: PlacementClient
) -> None:
    rps = [register(h) for h in ("h1", "h2", "h3")]
    zoned = _create(cloud, "zoned", "az1")
    plain = _create(cloud, "plain")
    other = _create(cloud, "other", "az2")
    _add(cloud, zoned["id"], "h1")
    _add(cloud, other["id"], "h2")
    _add(cloud, plain["id"], "h2")
    server = cloud.server(cloud.flavor("small"))
    assert server.host == "h1"
    ids = {"zoned": zoned["id"], "plain": plain["id"], "other": other["id"]}
    before = cloud.snapshot()
    in_placement = _placement_aggregates(placement_client, *rps)
    for method, path, body, status, message, token in _refusals(cloud, ids):
        response = _call(cloud, method, path, body, token=token)
        assert response.status_int == status, (method, path, body, response.body)
        text = next(iter(response.json.values()))["message"]
        assert message in text, (method, path, text)
        assert cloud.snapshot() == before, (method, path, body)
    assert _placement_aggregates(placement_client, *rps) == in_placement


def test_placement_down_refuses_add_host_and_changes_nothing(
    cloud: ApiHarness, register: Callable[..., str]
) -> None:
    register("h1")
    agg = _create(cloud, "rack")
    before = cloud.snapshot()
    cloud.conf.set_override("endpoint", "http://127.0.0.1:9", group="placement")
    cloud.conf.set_override("connect_retries", 0, group="placement")
    cloud.app.state._placement = None
    response = _action(cloud, agg["id"], {"add_host": {"host": "h1"}})
    assert response.status_int == 503, response.json
    assert "nothing was changed" in next(iter(response.json.values()))["message"]
    assert cloud.snapshot() == before


def test_a_host_without_a_provider_is_recorded(cloud: ApiHarness) -> None:
    cloud.db.service_report(host="h9", binary="resize-sched-compute", topic="compute")
    agg = _create(cloud, "rack")
    assert _add(cloud, agg["id"], "h9")["hosts"] == ["h9"]
    assert _action(cloud, agg["id"], {"remove_host": {"host": "h9"}}).status_int == 200


def _zones(cloud: ApiHarness, detail: bool = False, **kw: Any) -> Any:
    path = "/v2.1/os-availability-zone" + ("/detail" if detail else "")
    return cloud.request("GET", path, **kw)


def test_availability_zones(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    register("h3")
    agg = _create(cloud, "rack", "az1")
    _add(cloud, agg["id"], "h1")
    _create(cloud, "empty", "az-empty")  # no host: no zone listed
    listed = _zones(cloud, token=ALICE)
    assert listed.status_int == 200
    assert listed.json == {
        "availabilityZoneInfo": [
            {"zoneName": "az1", "zoneState": {"available": True}, "hosts": None},
            {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None},
        ]
    }
    assert _zones(cloud, detail=True, token=ALICE).status_int == 403
    detail = {z["zoneName"]: z for z in _zones(cloud, detail=True).json["availabilityZoneInfo"]}
    assert sorted(detail) == ["az1", "nova"]
    assert sorted(detail["nova"]["hosts"]) == ["h2", "h3"]
    h1 = detail["az1"]["hosts"]["h1"]["nova-compute"]
    assert (h1["available"], h1["active"]) == (True, True)
    service = cloud.db.service_get_by_host("h1")
    cloud.db.service_set_disabled(service.uuid, True, "maintenance")
    listed = _zones(cloud).json["availabilityZoneInfo"]
    assert {"zoneName": "az1", "zoneState": {"available": False}, "hosts": None} in listed


def _boot(cloud: ApiHarness, zone: Any = None, **kw: Any) -> Any:
    server: dict[str, Any] = {"name": "vm", "flavorRef": "small"}
    if zone is not None:
        server["availability_zone"] = zone
    return cloud.request("POST", "/v2.1/servers", {"server": server}, token=ALICE, **kw)


def test_server_create_in_a_zone(cloud: ApiHarness, register: Callable[..., str]) -> None:
    register("h1")
    register("h2")
    cloud.flavor("small")
    agg = _create(cloud, "rack", "az1")
    _add(cloud, agg["id"], "h1")
    before = cloud.snapshot()
    for zone, message in (
        ("nowhere", "The requested availability zone is not available"),
        ("az1:h1", "forcing a host"),
    ):
        response = _boot(cloud, zone)
        assert response.status_int == 400, response.json
        assert message in response.json["badRequest"]["message"]
        assert cloud.snapshot() == before
    cloud.assert_no_cast()
    created = _boot(cloud, "az1")
    assert created.status_int == 202, created.json
    server_id = created.json["server"]["id"]
    assert cloud.next_cast().kwargs == {"server_uuid": server_id}
    assert cloud.db.request_spec_get(server_id).availability_zone == "az1"
    shown = cloud.request("GET", f"/v2.1/servers/{server_id}", token=ALICE).json["server"]
    assert shown["OS-EXT-AZ:availability_zone"] == "az1"  # asked, no host yet
    cloud.place(server_id, "h2")
    shown = cloud.request("GET", f"/v2.1/servers/{server_id}", token=ALICE).json["server"]
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"  # its host's zone
    listed = cloud.request("GET", "/v2.1/servers/detail", token=ALICE).json["servers"]
    assert listed[0]["OS-EXT-AZ:availability_zone"] == "nova"
    # no zone asked: [DEFAULT] default_schedule_zone
    cloud.conf.set_override("default_schedule_zone", "az1")
    server_id = _boot(cloud).json["server"]["id"]
    cloud.next_cast()
    assert cloud.db.request_spec_get(server_id).availability_zone == "az1"
    plain = _boot(cloud, None)
    assert plain.status_int == 202
    cloud.next_cast()
    cloud.conf.set_override("default_schedule_zone", "gone")
    before = cloud.snapshot()
    assert _boot(cloud).status_int == 400
    assert cloud.snapshot() == before
