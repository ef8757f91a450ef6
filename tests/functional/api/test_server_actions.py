"""``POST /v2.1/servers/{id}/action``: resize, confirmResize, revertResize."""

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness, CastBus


def _action(api: ApiHarness, server: Any, body: Any, token: str = ALICE, **kw: Any) -> Any:
    return api.request("POST", f"/v2.1/servers/{server.uuid}/action", body, token=token, **kw)


@pytest.fixture
def flavors(api: ApiHarness) -> tuple[Any, Any]:
    return api.flavor("small"), api.flavor("big", vcpus=2, memory_mb=1024)


def test_resize_begins_and_casts(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    small, big = flavors
    server = api.server(small)
    response = _action(api, server, {"resize": {"flavorRef": "big"}})
    assert response.status_int == 202
    assert response.body == b""

    stored = api.db.server_get(server.uuid)
    assert (stored.status, stored.task_state) == ("RESIZE", "resize_prep")
    (migration,) = api.db.migration_list(server_uuid=server.uuid)
    assert migration.status == "pre-migrating"
    assert migration.claim_strategy == "max_flavor"
    assert (migration.old_flavor["id"], migration.new_flavor["id"]) == ("small", "big")
    assert migration.source_host == "h1"

    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("resize_server", {"migration_uuid": migration.uuid})
    assert (cast.context.user_id, cast.context.project_id) == ("alice", "project-a")


def test_resize_uses_the_strategy_configured_now(
    api: ApiHarness, flavors: tuple[Any, Any]
) -> None:
    small, _ = flavors
    server = api.server(small)
    api.conf.set_override("claim_strategy", "legacy", group="resize")
    response = _action(api, server, {"resize": {"flavorRef": "http://h/v2.1/flavors/big"}})
    assert response.status_int == 202
    (migration,) = api.db.migration_list(server_uuid=server.uuid)
    assert migration.claim_strategy == "legacy"
    assert api.next_cast().method == "resize_server"


def test_admin_resizes_any_project(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    server = api.server(flavors[0], project_id="project-b", user_id="bob")
    assert _action(api, server, {"resize": {"flavorRef": "big"}}, token=ADMIN).status_int == 202
    (migration,) = api.db.migration_list(server_uuid=server.uuid)
    assert (migration.project_id, migration.user_id) == ("project-b", "bob")


@pytest.mark.parametrize(
    ("body", "token", "status"),
    [
        ({"resize": {"flavorRef": "no-such"}}, ALICE, 400),
        ({"resize": {"flavorRef": "private"}}, ALICE, 400),
        ({"resize": {"flavorRef": "small"}}, ALICE, 400),
        ({"resize": {}}, ALICE, 400),
        ({"resize": {"flavorRef": "big", "size": 2}}, ALICE, 400),
        ({"resize": None}, ALICE, 400),
        ({"resize": {"flavorRef": "big"}, "confirmResize": None}, ALICE, 400),
        ({}, ALICE, 400),
        ({"reboot": {"type": "HARD"}}, ALICE, 400),
        ({"resize": {"flavorRef": "big"}}, BOB, 404),
        ({"reboot": {"type": "HARD"}}, BOB, 404),
    ],
)
def test_resize_refusals_change_nothing(
    api: ApiHarness, flavors: tuple[Any, Any], body: Any, token: str, status: int
) -> None:
    api.flavor("private", memory_mb=2048, is_public=False)
    server = api.server(flavors[0])
    before = api.snapshot()
    response = _action(api, server, body, token=token)
    assert response.status_int == status, response.json
    assert api.snapshot() == before
    api.assert_no_cast()


def test_resize_of_unknown_server_is_404_even_with_a_bad_flavor(api: ApiHarness) -> None:
    before = api.snapshot()
    response = api.request(
        "POST", "/v2.1/servers/nope/action", {"resize": {"flavorRef": "no-such"}}, token=ALICE
    )
    assert response.status_int == 404
    assert api.snapshot() == before


def test_malformed_action_body_is_400(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    server = api.server(flavors[0])
    before = api.snapshot()
    response = _action(api, server, None, raw=b'{"resize": ')
    assert response.status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()


@pytest.mark.parametrize("state", ["BUILD", "RESIZE", "VERIFY_RESIZE", "ERROR"])
def test_resize_in_the_wrong_state_is_409(
    api: ApiHarness, flavors: tuple[Any, Any], state: str
) -> None:
    small, big = flavors
    api.flavor("huge", vcpus=4, memory_mb=4096)
    server = api.server(small, active=state != "BUILD")
    if state == "RESIZE":
        assert _action(api, server, {"resize": {"flavorRef": "big"}}).status_int == 202
        api.next_cast()
    elif state == "VERIFY_RESIZE":
        api.verify_resize(server, big)
    elif state == "ERROR":
        api.db.server_update(server.uuid, status="ERROR", vm_state="error", task_state=None)
    before = api.snapshot()
    response = _action(api, server, {"resize": {"flavorRef": "huge"}})
    assert response.status_int == 409, response.json
    assert "conflictingRequest" in response.json
    assert api.snapshot() == before
    api.assert_no_cast()


def test_concurrent_resizes_one_wins(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    api.flavor("huge", vcpus=4, memory_mb=4096)
    server = api.server(flavors[0])
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def resize(flavor: str) -> None:
        barrier.wait()
        statuses.append(_action(api, server, {"resize": {"flavorRef": flavor}}).status_int)

    threads = [threading.Thread(target=resize, args=(f,)) for f in ("big", "huge")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [202, 409]
    assert len(api.db.migration_list(server_uuid=server.uuid)) == 1
    assert api.next_cast().method == "resize_server"
    api.assert_no_cast()


def test_confirm(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    server = api.server(flavors[0])
    migration = api.verify_resize(server, flavors[1])
    response = _action(api, server, {"confirmResize": None})
    assert response.status_int == 204
    stored = api.db.server_get(server.uuid)
    assert (stored.status, stored.task_state) == ("VERIFY_RESIZE", "resize_confirming")
    assert api.db.migration_get(migration.uuid).status == "confirming"
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("confirm_resize", {"migration_uuid": migration.uuid})


def test_revert(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    server = api.server(flavors[0])
    migration = api.verify_resize(server, flavors[1])
    response = _action(api, server, {"revertResize": None})
    assert response.status_int == 202
    stored = api.db.server_get(server.uuid)
    assert (stored.status, stored.task_state) == ("REVERT_RESIZE", "resize_reverting")
    assert api.db.migration_get(migration.uuid).status == "reverting"
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("revert_resize", {"migration_uuid": migration.uuid})


@pytest.mark.parametrize("action", ["confirmResize", "revertResize"])
def test_decisions_need_verify_resize(
    api: ApiHarness, flavors: tuple[Any, Any], action: str
) -> None:
    active = api.server(flavors[0])
    resizing = api.server(flavors[0], name="resizing")
    assert _action(api, resizing, {"resize": {"flavorRef": "big"}}).status_int == 202
    api.next_cast()
    before = api.snapshot()
    for server in (active, resizing):
        response = _action(api, server, {action: None})
        assert response.status_int == 409, response.json
    assert api.snapshot() == before
    api.assert_no_cast()


@pytest.mark.parametrize("action", ["confirmResize", "revertResize"])
def test_decision_refusals_change_nothing(
    api: ApiHarness, flavors: tuple[Any, Any], action: str
) -> None:
    server = api.server(flavors[0])
    api.verify_resize(server, flavors[1])
    before = api.snapshot()
    assert _action(api, server, {action: None}, token=BOB).status_int == 404
    assert _action(api, server, {action: {}}, token=BOB).status_int == 404
    assert _action(api, server, {action: None, "extra": 1}).status_int == 400
    assert api.snapshot() == before
    api.assert_no_cast()


def test_second_confirm_is_409(api: ApiHarness, flavors: tuple[Any, Any]) -> None:
    server = api.server(flavors[0])
    api.verify_resize(server, flavors[1])
    assert _action(api, server, {"confirmResize": None}).status_int == 204
    api.next_cast()
    before = api.snapshot()
    assert _action(api, server, {"confirmResize": None}).status_int == 409
    assert _action(api, server, {"revertResize": None}).status_int == 409
    assert api.snapshot() == before
    api.assert_no_cast()


def test_unknown_strategy_is_a_500_that_changes_nothing(tmp_path: Path, cast_bus: CastBus) -> None:
    # NOTE: fake:// transports in one process share their exchanges: use the
    # session's bus, or a second recorder would steal its casts.
    api = ApiHarness(tmp_path, claim_strategy="no_such_strategy", bus=cast_bus)
    try:
        small, _ = api.flavor("small"), api.flavor("big", memory_mb=1024)
        server = api.server(small)
        before = api.snapshot()
        response = _action(api, server, {"resize": {"flavorRef": "big"}})
        assert response.status_int == 500
        message = response.json["computeFault"]["message"]
        assert response.headers["x-openstack-request-id"] in message
        assert "no_such_strategy" not in message
        assert api.snapshot() == before
        api.assert_no_cast()
    finally:
        api.close()
