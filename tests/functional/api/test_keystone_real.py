"""The token-scope matrix against a real Keystone (slow).

Keystone itself (the ``keystone`` package) runs in a subprocess on SQLite
with fernet tokens, set up as an operator would
(:class:`tests.functional.fixtures.keystone.KeystoneServer`). Users get
real role assignments on a project, on the default domain and on the
system, and ask Keystone for tokens of each scope; our API, configured
with ``[keystone_authtoken]`` as a deployment would be, validates them
against that Keystone. The answers must be those of the
matrix in :mod:`tests.functional.api.test_token_scope`.

Keystone is installed by the ``faults`` tox environment (see tox.ini); the
test is skipped where it is not installed.
"""

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from tests.functional.api.harness import ApiHarness
from tests.functional.api.test_token_scope import EXPECTED, ROLES, check_matrix, world_of
from tests.functional.fixtures.keystone import (
    ADMIN_PASSWORD,
    PASSWORD,
    Keystone,
    KeystoneServer,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("keystone") is None,
        reason="the keystone package is not installed (tox -e faults installs it)",
    ),
]


@pytest.fixture(scope="module")
def keystone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keystone]:
    """Keystone on SQLite with fernet tokens, bootstrapped, served on 127.0.0.1."""
    server = KeystoneServer(tmp_path_factory.mktemp("keystone"))
    try:
        yield server.start()
    finally:
        server.stop()


@dataclass
class Cloud:
    """Projects, and one user per (token shape, role) with its token."""

    own: str
    other: str
    tokens: dict[tuple[str, str], str]


@pytest.fixture(scope="module")
def cloud(keystone: Keystone) -> Cloud:
    own, other = keystone.project("project-a"), keystone.project("project-b")
    tokens = {}
    for shape, role in EXPECTED:
        name = f"{shape}-{role}".replace("-", "_").strip("_")
        user_id = keystone.user(name)
        role_id = keystone.roles.get(role)
        if shape == "project":
            keystone.call("PUT", f"/projects/{own}/users/{user_id}/roles/{role_id}")
            scope: dict[str, Any] | None = {"project": {"id": own}}
        elif shape == "domain":
            keystone.call("PUT", f"/domains/default/users/{user_id}/roles/{role_id}")
            scope = {"domain": {"id": "default"}}
        elif shape == "system":
            keystone.call("PUT", f"/system/users/{user_id}/roles/{role_id}")
            scope = {"system": {"all": True}}
        else:
            scope = None
        tokens[shape, role] = keystone.token(name, PASSWORD, scope)
    return Cloud(own, other, tokens)


@pytest.fixture
def behind_keystone(api: ApiHarness, keystone: Keystone, tmp_path: Path) -> ApiHarness:
    """``api`` rebuilt with auth_token validating against the real Keystone."""
    config = tmp_path / "resize_sched.conf"
    config.write_text(
        "[api]\nauth_strategy = keystone\n"
        "[keystone_authtoken]\n"
        f"www_authenticate_uri = {keystone.url}/v3\n"
        f"auth_url = {keystone.url}/v3\n"
        "auth_type = password\n"
        "username = admin\n"
        f"password = {ADMIN_PASSWORD}\n"
        "project_name = admin\n"
        "user_domain_id = default\n"
        "project_domain_id = default\n"
        "interface = public\n"
        "region_name = RegionOne\n"
    )
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)], default_config_files=[])
    api.app = build_app(conf, api.db, api.conductor)
    return api


def test_keystone_gives_each_token_its_scope(keystone: Keystone, cloud: Cloud) -> None:
    """The tokens are what the matrix says they are (checked with Keystone itself)."""
    for (shape, role), token in cloud.tokens.items():
        found = requests.get(
            f"{keystone.url}/v3/auth/tokens",
            headers={"X-Auth-Token": keystone.admin_token, "X-Subject-Token": token},
            timeout=60,
        ).json()["token"]
        assert ("project" in found) == (shape == "project"), (shape, role)
        assert ("domain" in found) == (shape == "domain"), (shape, role)
        assert ("system" in found) == (shape == "system"), (shape, role)
        names = {r["name"] for r in found.get("roles", [])}
        assert set(ROLES.get(role, ())) <= names, (shape, role, names)


@pytest.mark.parametrize(("shape", "role"), sorted(EXPECTED))
def test_real_tokens_against_every_action(
    behind_keystone: ApiHarness, cloud: Cloud, shape: str, role: str
) -> None:
    world = world_of(behind_keystone, own=cloud.own, other=cloud.other)
    check_matrix(behind_keystone, world, cloud.tokens[shape, role], shape, role)
