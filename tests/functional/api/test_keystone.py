"""The API with ``[api] auth_strategy = keystone``, the default.

keystonemiddleware's own ``AuthTokenFixture`` stands in for Keystone: it
answers auth_token's token validation with the tokens a test registers, and
everything else (header handling, expiry, the 401, our context and policy
rules behind it) is the real code path of the WSGI application. A token
lists every role its user holds, implied ones included, as Keystone puts
them in a token (``admin`` implies ``member``, which implies ``reader``).
"""

import datetime
import uuid
from typing import Any

import pytest
import requests
from keystonemiddleware import auth_token
from keystonemiddleware import fixture as ks_fixture

from tests.functional.api.conftest import KEYSTONE
from tests.functional.api.harness import ApiHarness, WaitressThread

ADMIN_ROLES = ("admin", "member", "reader")
MEMBER_ROLES = ("member", "reader")
MANAGER_ROLES = ("manager", "member", "reader")


def _token(
    tokens: ks_fixture.AuthTokenFixture,
    roles: tuple[str, ...],
    *,
    user: str = "alice",
    project: str = "project-a",
    expires: datetime.datetime | None = None,
) -> str:
    token_id = uuid.uuid4().hex
    tokens.add_token_data(
        token_id=token_id,
        user_id=user,
        project_id=project,
        role_list=list(roles),
        expires=expires,
    )
    return token_id


@pytest.fixture
def servers(keystone_api: ApiHarness) -> tuple[Any, Any]:
    """Alice's server in project-a and Bob's in project-b, both ACTIVE on h1."""
    small = keystone_api.flavor("small")
    keystone_api.flavor("big", vcpus=2, memory_mb=1024)
    mine = keystone_api.server(small, name="mine")
    theirs = keystone_api.server(small, name="theirs", project_id="project-b", user_id="bob")
    return mine, theirs


def test_the_default_strategy_runs_auth_token(keystone_api: ApiHarness) -> None:
    assert isinstance(keystone_api.app.versioned, auth_token.AuthProtocol)


def test_an_admin_token_sees_and_does_everything(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    api = keystone_api
    token = _token(tokens, ADMIN_ROLES, user="root", project="admin-project")
    _, theirs = servers
    listed = api.request("GET", "/v2.1/servers/detail?all_tenants=1", token=token)
    assert listed.status_int == 200, listed.json
    assert sorted(s["name"] for s in listed.json["servers"]) == ["mine", "theirs"]
    shown = api.request("GET", f"/v2.1/servers/{theirs.uuid}", token=token).json["server"]
    assert shown["OS-EXT-SRV-ATTR:host"] == "h1"

    body = {"flavor": {"name": "tiny", "vcpus": 1, "ram": 64, "disk": 0}}
    assert api.request("POST", "/v2.1/flavors", body, token=token).status_int == 200
    assert api.request("GET", "/v2.1/os-migrations", token=token).status_int == 200

    resize = {"resize": {"flavorRef": "big"}}
    response = api.request("POST", f"/v2.1/servers/{theirs.uuid}/action", resize, token=token)
    assert response.status_int == 202
    cast = api.next_cast()
    assert cast.method == "resize_server"
    assert (cast.context.user_id, cast.context.project_id) == ("root", "admin-project")
    assert cast.context.is_admin is True
    assert set(cast.context.roles) == set(ADMIN_ROLES)


def test_a_member_token_acts_in_its_own_project_only(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    api = keystone_api
    token = _token(tokens, MEMBER_ROLES)
    mine, theirs = servers
    listed = api.request("GET", "/v2.1/servers", token=token)
    assert [s["name"] for s in listed.json["servers"]] == ["mine"]
    shown = api.request("GET", f"/v2.1/servers/{mine.uuid}", token=token).json["server"]
    assert "OS-EXT-SRV-ATTR:host" not in shown
    assert api.request("GET", f"/v2.1/servers/{theirs.uuid}", token=token).status_int == 404

    before = api.snapshot()
    for method, path, body in (
        ("GET", "/v2.1/servers?all_tenants=1", None),
        ("POST", "/v2.1/flavors", {"flavor": {"name": "x", "vcpus": 1, "ram": 64, "disk": 0}}),
        ("GET", "/v2.1/os-migrations", None),
    ):
        response = api.request(method, path, body, token=token)
        assert response.status_int == 403, (method, path, response.body)
    resize = {"resize": {"flavorRef": "big"}}
    response = api.request("POST", f"/v2.1/servers/{theirs.uuid}/action", resize, token=token)
    assert response.status_int == 404
    assert api.snapshot() == before
    api.assert_no_cast()

    response = api.request("POST", f"/v2.1/servers/{mine.uuid}/action", resize, token=token)
    assert response.status_int == 202
    cast = api.next_cast()
    assert (cast.context.user_id, cast.context.project_id) == ("alice", "project-a")
    assert (cast.context.is_admin, set(cast.context.roles)) == (False, set(MEMBER_ROLES))


def test_a_reader_token_reads_but_does_not_change(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    api = keystone_api
    token = _token(tokens, ("reader",))
    mine, _ = servers
    assert api.request("GET", f"/v2.1/servers/{mine.uuid}", token=token).status_int == 200
    before = api.snapshot()
    resize = {"resize": {"flavorRef": "big"}}
    response = api.request("POST", f"/v2.1/servers/{mine.uuid}/action", resize, token=token)
    assert response.status_int == 403
    assert "os_compute_api:servers:resize" in response.json["forbidden"]["message"]
    boot = {"server": {"name": "new", "flavorRef": "small"}}
    assert api.request("POST", "/v2.1/servers", boot, token=token).status_int == 403
    assert api.request("DELETE", f"/v2.1/servers/{mine.uuid}", token=token).status_int == 403
    assert api.snapshot() == before
    api.assert_no_cast()


def test_a_token_without_roles_may_not_even_read(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    token = _token(tokens, ())
    assert keystone_api.request("GET", "/v2.1/servers", token=token).status_int == 403


def test_a_manager_lists_its_own_projects_migrations_without_hosts(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    api = keystone_api
    mine, theirs = servers
    big = api.db.flavor_get("big")
    api.verify_resize(mine, big)
    api.verify_resize(theirs, big)
    token = _token(tokens, MANAGER_ROLES)

    for version in ("2.1", "2.80"):
        response = api.request(
            "GET", "/v2.1/os-migrations?project_id=project-a", token=token, version=version
        )
        assert response.status_int == 200, response.json
        (migration,) = response.json["migrations"]
        assert migration["instance_uuid"] == mine.uuid
        for key in ("source_compute", "source_node", "dest_compute", "dest_node", "dest_host"):
            assert migration[key] is None, key
    for query in ("", "?project_id=project-b"):
        response = api.request("GET", f"/v2.1/os-migrations{query}", token=token, version="2.80")
        assert response.status_int == 403, query
        assert "index:all_projects" in response.json["forbidden"]["message"]

    admin = _token(tokens, ADMIN_ROLES, user="root", project="admin-project")
    response = api.request("GET", "/v2.1/os-migrations", token=admin, version="2.80")
    assert {m["source_compute"] for m in response.json["migrations"]} == {"h1"}
    assert len(response.json["migrations"]) == 2


@pytest.mark.parametrize("kind", ["expired", "unknown", "missing"])
def test_refused_tokens_are_401_and_change_nothing(
    keystone_api: ApiHarness,
    tokens: ks_fixture.AuthTokenFixture,
    servers: tuple[Any, Any],
    kind: str,
) -> None:
    api = keystone_api
    mine, _ = servers
    token: str | None = None
    if kind == "expired":
        an_hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
        token = _token(tokens, ADMIN_ROLES, expires=an_hour_ago)
    elif kind == "unknown":
        token = uuid.uuid4().hex
    before = api.snapshot()
    for method, path, body in (
        ("GET", "/v2.1/servers", None),
        ("POST", f"/v2.1/servers/{mine.uuid}/action", {"resize": {"flavorRef": "big"}}),
        ("DELETE", f"/v2.1/servers/{mine.uuid}", None),
    ):
        response = api.request(method, path, body, token=token)
        assert response.status_int == 401, (method, path)
        assert response.headers["WWW-Authenticate"] == f'Keystone uri="{KEYSTONE}"'
        assert response.headers["x-openstack-request-id"].startswith("req-")
    assert api.snapshot() == before
    api.assert_no_cast()
    # The version documents need no token.
    assert api.request("GET", "/v2.1", token=token).status_int == 200


def test_over_http(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, servers: tuple[Any, Any]
) -> None:
    member = _token(tokens, MEMBER_ROLES)
    with WaitressThread(keystone_api.app) as server:
        url = f"{server.endpoint}/servers"
        response = requests.get(url, headers={"X-Auth-Token": member}, timeout=10)
        assert response.status_code == 200
        assert [s["name"] for s in response.json()["servers"]] == ["mine"]
        response = requests.get(url, headers={"X-Auth-Token": "nonsense"}, timeout=10)
        assert response.status_code == 401


@pytest.mark.parametrize("token", ["admin:admin", "admin", "alice:project-a", None])
def test_development_tokens_and_forged_identity_headers_are_refused(
    keystone_api: ApiHarness,
    tokens: ks_fixture.AuthTokenFixture,
    servers: tuple[Any, Any],
    token: str | None,
) -> None:
    """noauth2's tokens mean nothing on the Keystone path, nor do the headers
    auth_token sets, when a client sends them itself."""
    api = keystone_api
    forged = {
        "X-Identity-Status": "Confirmed",
        "X-User-Id": "admin",
        "X-Project-Id": "project-a",
        "X-Roles": "admin,member,reader",
    }
    before = api.snapshot()
    for headers in ({}, forged):
        for method, path in (
            ("GET", "/v2.1/servers"),
            ("DELETE", f"/v2.1/servers/{servers[0].uuid}"),
        ):
            response = api.request(method, path, token=token, headers=headers)
            assert response.status_int == 401, (token, headers, response.body)
    assert api.snapshot() == before
    api.assert_no_cast()
