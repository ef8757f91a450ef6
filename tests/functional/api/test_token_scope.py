"""Every token shape keystonemiddleware produces, against every kind of action.

The tokens are Keystone v3 tokens as keystoneauth1's fixture builds them,
validated by the real ``auth_token`` middleware (its ``AuthTokenFixture``
answers the validation call): scoped to a project, to a domain, to the
system, or unscoped, with the roles Keystone puts in them (implied ones
included). Only a project-scoped token may do anything; every other shape is
refused with 403 on every route, lists nothing, changes nothing, and gets the
same answer for a server that exists and one that does not.
"""

import re
import uuid
from typing import Any

import pytest
from keystoneauth1.fixture import v3 as ks_v3
from keystonemiddleware import fixture as ks_fixture

from resize_sched import exception
from resize_sched.db.project_scope import ALL_PROJECTS
from tests.functional.api.harness import ApiHarness

ROLES = {
    "reader": ("reader",),
    "member": ("member", "reader"),
    "admin": ("admin", "member", "reader"),
}

#: (token shape, role) -> action -> status. The actions are those of
#: :func:`_actions`, in that order.
ACTIONS = (
    "list",
    "detail",
    "detail all_tenants",
    "show own",
    "show foreign",
    "show missing",
    "create",
    "resize",
    "confirm",
    "revert",
    "delete",
    "resize foreign",
    "os-migrations",
    "flavors",
    "hypervisors",
    "services",
    "delete foreign",
)
_READER = (200, 200, 403, 200, 404, 404, 403, 403, 403, 403, 403, 404, 403, 200, 403, 403, 404)
_MEMBER = (200, 200, 403, 200, 404, 404, 202, 202, 204, 202, 204, 404, 403, 200, 403, 403, 404)
_ADMIN = (200, 200, 200, 200, 200, 404, 202, 202, 204, 202, 204, 202, 200, 200, 200, 200, 204)
_REFUSED = (403,) * len(ACTIONS)

EXPECTED = {
    ("project", "reader"): _READER,
    ("project", "member"): _MEMBER,
    ("project", "admin"): _ADMIN,
    **{(shape, role): _REFUSED for shape in ("domain", "system") for role in ROLES},
    ("unscoped", "-"): _REFUSED,
}

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def token_of(tokens: ks_fixture.AuthTokenFixture, shape: str, role: str) -> str:
    """A token of ``shape`` for the user alice holding ``role`` (and what it implies).

    :param tokens: keystonemiddleware's token validation stand-in.
    :param shape: ``project`` (project-a), ``domain``, ``system`` or ``unscoped``.
    :param role: a key of :data:`ROLES`, or ``-`` for none.
    :returns: the token id.
    """
    token = ks_v3.Token(user_id="alice", user_name="alice", user_domain_id="default")
    if shape == "project":
        token.set_project_scope(id="project-a", name="a", domain_id="default")
    elif shape == "domain":
        token.set_domain_scope(id="default", name="Default")
    elif shape == "system":
        token.set_system_scope()
    for name in ROLES.get(role, ()):
        token.add_role(name=name)
    return tokens.add_token(token)


def world_of(api: ApiHarness, own: str = "project-a", other: str = "project-b") -> dict[str, Any]:
    """Servers of project ``own`` to act on, one to resize, confirm, revert and
    delete, and two of project ``other`` (one with a migration)."""
    small = api.flavor("small")
    big = api.flavor("big", vcpus=2, memory_mb=1024)
    world = {
        name: api.server(small, name=name, project_id=own) for name in ("active", "to-delete")
    }
    for name in ("to-confirm", "to-revert"):
        world[name] = api.server(small, name=name, project_id=own)
        api.verify_resize(world[name], big)
    world["foreign"] = api.server(small, name="foreign", project_id=other, user_id="bob")
    api.verify_resize(api.server(small, name="b-resized", project_id=other), big)
    return world


def check_matrix(
    api: ApiHarness, world: dict[str, Any], token: str, shape: str, role: str
) -> dict[str, int]:
    """Run every action of :data:`ACTIONS` with ``token`` against ``world``
    (:func:`world_of`) and check the answers against :data:`EXPECTED`.

    :returns: action -> status, as answered.
    """
    before = api.snapshot()
    answers = [api.request(m, path, body, token=token) for m, path, body in _actions(world)]
    statuses = {action: r.status_int for action, r in zip(ACTIONS, answers, strict=True)}
    assert statuses == dict(zip(ACTIONS, EXPECTED[shape, role], strict=True))

    by_action = dict(zip(ACTIONS, answers, strict=True))
    if role != "admin" or shape != "project":
        # Existence never leaks: a foreign server is answered as a missing one.
        assert _same_answer(by_action["show foreign"]) == _same_answer(by_action["show missing"])
    if shape != "project":
        for action, response in by_action.items():
            assert "servers" not in response.json, action
            assert "project-scoped tokens only" in response.json["forbidden"]["message"]
        assert api.snapshot() == before
        api.assert_no_cast()
    return statuses


def _actions(world: dict[str, Any]) -> list[tuple[str, str, Any]]:
    servers = "/v2.1/servers"
    resize = {"resize": {"flavorRef": "big"}}
    return [
        ("GET", servers, None),
        ("GET", f"{servers}/detail", None),
        ("GET", f"{servers}/detail?all_tenants=1", None),
        ("GET", f"{servers}/{world['active'].uuid}", None),
        ("GET", f"{servers}/{world['foreign'].uuid}", None),
        ("GET", f"{servers}/{uuid.uuid4()}", None),
        ("POST", servers, {"server": {"name": "new", "flavorRef": "small"}}),
        ("POST", f"{servers}/{world['active'].uuid}/action", resize),
        ("POST", f"{servers}/{world['to-confirm'].uuid}/action", {"confirmResize": None}),
        ("POST", f"{servers}/{world['to-revert'].uuid}/action", {"revertResize": None}),
        ("DELETE", f"{servers}/{world['to-delete'].uuid}", None),
        ("POST", f"{servers}/{world['foreign'].uuid}/action", resize),
        ("GET", "/v2.1/os-migrations", None),
        ("GET", "/v2.1/flavors", None),
        ("GET", "/v2.1/os-hypervisors", None),
        ("GET", "/v2.1/os-services", None),
        ("DELETE", f"{servers}/{world['foreign'].uuid}", None),
    ]


def _same_answer(response: Any) -> tuple[int, str]:
    return response.status_int, _UUID.sub("UUID", response.text)


@pytest.mark.parametrize(("shape", "role"), sorted(EXPECTED))
def test_token_shape_and_role_against_every_action(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, shape: str, role: str
) -> None:
    world = world_of(keystone_api)
    check_matrix(keystone_api, world, token_of(tokens, shape, role), shape, role)


@pytest.mark.parametrize("shape", ["domain", "system"])
def test_a_token_without_project_lists_no_server_even_with_every_filter(
    keystone_api: ApiHarness, tokens: ks_fixture.AuthTokenFixture, shape: str
) -> None:
    """The issue's leak: 113 servers of two projects listed to a domain member."""
    api = keystone_api
    world_of(api)
    for role in ROLES:
        token = token_of(tokens, shape, role)
        for query in ("", "?all_tenants=1", "?project_id=project-a&all_tenants=1", "?name=."):
            response = api.request("GET", f"/v2.1/servers/detail{query}", token=token)
            assert response.status_int == 403, (role, query)
            assert response.json.get("servers", []) == []


def test_server_queries_refuse_a_missing_project(keystone_api: ApiHarness) -> None:
    """Beneath the policy: None is never read as every project."""
    db = keystone_api.db
    world = world_of(keystone_api)
    mine = world["active"]
    for project in (None, ""):
        with pytest.raises(exception.ProjectRequired):
            db.server_list(project)
        with pytest.raises(exception.ProjectRequired):
            db.server_get(mine.uuid, project_id=project)
        with pytest.raises(exception.ProjectRequired):
            db.server_begin_delete(mine.uuid, project)
    assert db.server_get(mine.uuid).task_state is None
    assert {s.project_id for s in db.server_list("project-a")} == {"project-a"}
    assert len(db.server_list(ALL_PROJECTS)) == len(db.server_list()) == 6
