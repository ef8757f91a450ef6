"""``GET /v2.1/os-migrations``: admin only, filters, microversioned fields."""

import datetime
from typing import Any

import pytest

from tests.functional.api.harness import ALICE, ApiHarness


@pytest.fixture
def resizes(api: ApiHarness) -> tuple[Any, Any]:
    """Two migrations: one finished (alice's), one failed (bob's)."""
    small, big = api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)
    mine = api.server(small, name="mine")
    theirs = api.server(small, name="theirs", project_id="project-b", user_id="bob")
    finished = api.verify_resize(mine, big)
    failed = api.verify_resize(theirs, big)
    failed = api.db.migration_update(
        failed.uuid, status="error", error_kind="deferred", error_reason="no room"
    )
    return finished, failed


def _list(api: ApiHarness, query: str = "", version: str | None = "2.80") -> list[dict]:
    response = api.request("GET", f"/v2.1/os-migrations{query}", version=version)
    assert response.status_int == 200, response.json
    return response.json["migrations"]


def test_fields_at_2_80(api: ApiHarness, resizes: tuple[Any, Any]) -> None:
    finished, failed = resizes
    by_uuid = {m["uuid"]: m for m in _list(api)}
    body = by_uuid[finished.uuid]
    assert body == {
        "id": finished.id,
        "uuid": finished.uuid,
        "instance_uuid": finished.server_uuid,
        "status": "finished",
        "migration_type": "resize",
        "source_compute": "h1",
        "source_node": "h1",
        "dest_compute": "h2",
        "dest_node": "h2",
        "dest_host": "h2",
        "old_instance_type_id": api.db.flavor_get("small").id,
        "new_instance_type_id": api.db.flavor_get("big").id,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
        "user_id": "alice",
        "project_id": "project-a",
    }
    assert datetime.datetime.fromisoformat(body["created_at"]).tzinfo is None
    # NOTE: only Nova's fields: why it failed is in resize-sched-manage.
    assert set(by_uuid[failed.uuid]) == set(body)


def test_flavor_ids_are_the_database_ids_even_once_deleted(
    api: ApiHarness, resizes: tuple[Any, Any]
) -> None:
    finished, _ = resizes
    big_id = api.db.flavor_get("big").id
    api.db.flavor_delete("big")
    (body,) = _list(api, f"?instance_uuid={finished.server_uuid}")
    assert body["new_instance_type_id"] == big_id


def test_fields_follow_the_microversion(api: ApiHarness, resizes: tuple[Any, Any]) -> None:
    base = _list(api, version=None)[0]
    assert not {"uuid", "migration_type", "user_id"} & set(base)
    assert "migration_type" in _list(api, version="2.23")[0]
    mid = _list(api, version="2.59")[0]
    assert "uuid" in mid and "user_id" not in mid


def test_filters(api: ApiHarness, resizes: tuple[Any, Any]) -> None:
    finished, failed = resizes

    def uuids(query: str) -> list[str]:
        return sorted(m["uuid"] for m in _list(api, query))

    assert uuids(f"?instance_uuid={finished.server_uuid}") == [finished.uuid]
    assert uuids("?status=error") == [failed.uuid]
    assert uuids("?migration_type=resize") == sorted([finished.uuid, failed.uuid])
    assert uuids("?migration_type=live-migration") == []
    assert uuids("?source_compute=h1&status=finished") == [finished.uuid]
    assert uuids("?host=h2") == sorted([finished.uuid, failed.uuid])
    assert uuids("?host=h3") == []
    assert uuids("?project_id=project-b") == [failed.uuid]
    assert uuids("?user_id=alice") == [finished.uuid]
    assert uuids("?changes-since=2000-01-01T00:00:00Z") == sorted([finished.uuid, failed.uuid])
    assert uuids("?changes-before=2000-01-01T00:00:00") == []


def test_newest_first_and_pages(api: ApiHarness, resizes: tuple[Any, Any]) -> None:
    finished, failed = resizes
    assert [m["uuid"] for m in _list(api)] == [failed.uuid, finished.uuid]
    response = api.request("GET", "/v2.1/os-migrations?limit=1", version="2.80")
    assert [m["uuid"] for m in response.json["migrations"]] == [failed.uuid]
    assert f"marker={failed.uuid}" in response.json["migrations_links"][0]["href"]
    assert [m["uuid"] for m in _list(api, f"?limit=1&marker={failed.uuid}")] == [finished.uuid]


@pytest.mark.parametrize(
    "query", ["?limit=x", "?marker=nope", "?changes-since=yesterday", "?changes-before=12"]
)
def test_bad_queries_are_400(api: ApiHarness, resizes: tuple[Any, Any], query: str) -> None:
    response = api.request("GET", f"/v2.1/os-migrations{query}", version="2.80")
    assert response.status_int == 400


def test_admin_only(api: ApiHarness, resizes: tuple[Any, Any]) -> None:
    response = api.request("GET", "/v2.1/os-migrations", token=ALICE)
    assert response.status_int == 403
    assert response.json["forbidden"]["code"] == 403
