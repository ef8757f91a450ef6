"""``POST /v2.1/servers/{id}/action`` with ``migrate`` (cold migration).

The API's part only: the checks, in Nova's order (404, 403, 409, then the
named host's 400), the migration it records and the cast; every refusal
changes nothing and casts nothing.
"""

import uuid
from typing import Any

import pytest

from tests.functional.api.harness import ADMIN, ALICE, BOB, ApiHarness

INVENTORY = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}}


def _migrate(api: ApiHarness, server: Any, body: Any, token: str = ADMIN, **kw: Any) -> Any:
    return api.request("POST", f"/v2.1/servers/{server.uuid}/action", body, token=token, **kw)


def _compute(api: ApiHarness, host: str, disabled: str | None = None) -> None:
    service, _ = api.db.compute_node_report(
        host=host, node=host, rp_uuid=str(uuid.uuid4()), inventory=INVENTORY
    )
    if disabled is not None:
        api.db.service_set_disabled(service.uuid, True, disabled)


@pytest.fixture
def server(api: ApiHarness) -> Any:
    for host in ("h1", "h2"):
        _compute(api, host)
    _compute(api, "h3", disabled="maintenance")
    return api.server(api.flavor("small"))


@pytest.mark.parametrize(
    ("body", "version", "host"),
    [
        ({"migrate": None}, None, None),
        ({"migrate": {}}, None, None),
        ({"migrate": {"host": "h2"}}, "2.56", "h2"),
        ({"migrate": {"host": None}}, "2.56", None),
        ({"migrate": None}, "2.80", None),
    ],
)
def test_migrate_begins_and_casts(
    api: ApiHarness, server: Any, body: Any, version: str | None, host: str | None
) -> None:
    response = _migrate(api, server, body, version=version)
    assert response.status_int == 202, response.json
    assert response.body == b""
    stored = api.db.server_get(server.uuid)
    assert (stored.status, stored.task_state) == ("RESIZE", "resize_prep")
    (migration,) = api.db.migration_list(server_uuid=server.uuid)
    assert (migration.migration_type, migration.status) == ("migration", "pre-migrating")
    assert migration.old_flavor == migration.new_flavor == stored.flavor
    assert (migration.requested_host, migration.claim_strategy) == (host, "max_flavor")
    cast = api.next_cast()
    assert (cast.method, cast.kwargs) == ("resize_server", {"migration_uuid": migration.uuid})
    (action, *_) = api.db.action_list(server.uuid)
    assert action.action == "migrate"


@pytest.mark.parametrize(
    ("body", "version", "token", "status", "says"),
    [
        # a host before 2.56, and bad shapes
        ({"migrate": {"host": "h2"}}, None, ADMIN, 400, "host"),
        ({"migrate": {"host": "h2"}}, "2.55", ADMIN, 400, "host"),
        ({"migrate": {"host": ""}}, "2.56", ADMIN, 400, ""),
        ({"migrate": {"host": "h2", "force": True}}, "2.56", ADMIN, 400, "force"),
        ({"migrate": "h2"}, None, ADMIN, 400, ""),
        # the named host
        ({"migrate": {"host": "nowhere"}}, "2.56", ADMIN, 400, "could not be found"),
        ({"migrate": {"host": "h3"}}, "2.56", ADMIN, 400, "disabled (maintenance)"),
        ({"migrate": {"host": "h1"}}, "2.56", ADMIN, 400, "can't be the same"),
        # the caller: its own server is 403 (admin only), another project's 404
        ({"migrate": None}, None, ALICE, 403, "os-migrate-server:migrate"),
        ({"migrate": None}, None, BOB, 404, ""),
    ],
)
def test_migrate_refusals_change_nothing(
    api: ApiHarness,
    server: Any,
    body: Any,
    version: str | None,
    token: str,
    status: int,
    says: str,
) -> None:
    before = api.snapshot()
    response = _migrate(api, server, body, token=token, version=version)
    assert response.status_int == status, response.json
    assert says in str(response.json)
    assert api.snapshot() == before
    api.assert_no_cast()


@pytest.mark.parametrize("state", ["BUILD", "RESIZE", "VERIFY_RESIZE", "ERROR"])
def test_migrate_in_the_wrong_state_is_409_before_the_host(
    api: ApiHarness, server: Any, state: str
) -> None:
    """Nova checks the state first: a bad host on a server in the wrong state is a 409."""
    if state == "BUILD":
        server = api.server(api.flavor("tiny"), active=False)
    elif state == "RESIZE":
        assert _migrate(api, server, {"migrate": None}).status_int == 202
        api.next_cast()
    elif state == "VERIFY_RESIZE":
        api.verify_resize(server, api.flavor("big", vcpus=2))
    else:
        api.db.server_update(server.uuid, status="ERROR", vm_state="error", task_state=None)
    before = api.snapshot()
    response = _migrate(api, server, {"migrate": {"host": "nowhere"}}, version="2.56")
    assert response.status_int == 409, response.json
    assert "conflictingRequest" in response.json
    assert api.snapshot() == before
    api.assert_no_cast()


def test_a_stopped_server_may_be_migrated(api: ApiHarness, server: Any) -> None:
    api.db.server_update(server.uuid, status="SHUTOFF", vm_state="stopped")
    assert _migrate(api, server, {"migrate": None}).status_int == 202
    assert api.next_cast().method == "resize_server"
