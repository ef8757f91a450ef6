"""The token-scope matrix against a real Keystone (slow).

Keystone itself (the ``keystone`` package) runs in a subprocess on SQLite
with fernet tokens, set up as an operator would: ``keystone-manage
db_sync``, ``fernet_setup``, ``credential_setup`` and ``bootstrap``, then
``keystone.server.wsgi.initialize_public_application()`` served by waitress
on 127.0.0.1. Users get real role assignments on a project, on the default
domain and on the system, and ask Keystone for tokens of each scope; our
API, configured with ``[keystone_authtoken]`` as a deployment would be,
validates them against that Keystone. The answers must be those of the
matrix in :mod:`tests.functional.api.test_token_scope`.

Keystone is installed by the ``faults`` tox environment (see tox.ini); the
test is skipped where it is not installed.
"""

import grp
import importlib.util
import os
import pwd
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from tests.functional.api.harness import ApiHarness
from tests.functional.api.test_token_scope import EXPECTED, ROLES, check_matrix, world_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("keystone") is None,
        reason="the keystone package is not installed (tox -e faults installs it)",
    ),
]

ADMIN_PASSWORD = "s3cret-admin"
PASSWORD = "s3cret-user"

_SERVE = """
import os
import waitress
from keystone.server.wsgi import initialize_public_application

app = initialize_public_application()
server = waitress.create_server(app, host="127.0.0.1", port=int(os.environ["KS_PORT"]), threads=4)
print("KEYSTONE READY", flush=True)
server.run()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Keystone:
    """A running Keystone and an admin session on it."""

    url: str
    admin_token: str = ""
    roles: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        response = requests.request(
            method,
            f"{self.url}/v3{path}",
            json=body,
            headers={"X-Auth-Token": token or self.admin_token},
            timeout=60,
        )
        assert response.status_code < 300, (method, path, response.text)
        return response

    def token(self, user: str, password: str, scope: dict[str, Any] | None) -> str:
        auth: dict[str, Any] = {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"name": user, "domain": {"id": "default"}, "password": password}
                },
            }
        }
        if scope is not None:
            auth["scope"] = scope
        response = requests.post(f"{self.url}/v3/auth/tokens", json={"auth": auth}, timeout=60)
        assert response.status_code == 201, response.text
        return response.headers["X-Subject-Token"]

    def project(self, name: str) -> str:
        body = {"project": {"name": name, "domain_id": "default"}}
        return self.call("POST", "/projects", body).json()["project"]["id"]

    def user(self, name: str) -> str:
        body = {"user": {"name": name, "domain_id": "default", "password": PASSWORD}}
        return self.call("POST", "/users", body).json()["user"]["id"]


def _manage(python: str, config: Path, *args: str) -> None:
    manage = Path(python).parent / "keystone-manage"
    result = subprocess.run(
        [str(manage), "--config-file", str(config), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-2000:])


@pytest.fixture(scope="module")
def keystone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keystone]:
    """Keystone on SQLite with fernet tokens, bootstrapped, served on 127.0.0.1."""
    work = tmp_path_factory.mktemp("keystone")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    config = work / "keystone.conf"
    config.write_text(
        f"[database]\nconnection = sqlite:///{work}/keystone.db\n"
        "[token]\nprovider = fernet\n"
        f"[fernet_tokens]\nkey_repository = {work}/fernet-keys\n"
        f"[fernet_receipts]\nkey_repository = {work}/fernet-keys\n"
        f"[credential]\nkey_repository = {work}/credential-keys\n"
    )
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    python = sys.executable
    _manage(python, config, "db_sync")
    _manage(python, config, "fernet_setup", "--keystone-user", user, "--keystone-group", group)
    _manage(python, config, "credential_setup", "--keystone-user", user, "--keystone-group", group)
    _manage(
        python,
        config,
        "bootstrap",
        "--bootstrap-password",
        ADMIN_PASSWORD,
        "--bootstrap-public-url",
        f"{url}/v3",
        "--bootstrap-region-id",
        "RegionOne",
    )
    serve = work / "serve.py"
    serve.write_text(_SERVE)
    log = (work / "keystone.log").open("w")
    process = subprocess.Popen(
        [python, str(serve)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={
            **os.environ,
            "KS_PORT": str(port),
            "OS_KEYSTONE_CONFIG_FILES": str(config),
            "PYTHONWARNINGS": "ignore",
        },
        cwd=work,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (work / "keystone.log").read_text()[-3000:]
            try:
                if requests.get(f"{url}/v3", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, (work / "keystone.log").read_text()[-3000:]
            time.sleep(0.5)
        found = Keystone(url)
        found.admin_token = found.token(
            "admin", ADMIN_PASSWORD, {"project": {"name": "admin", "domain": {"id": "default"}}}
        )
        found.roles = {r["name"]: r["id"] for r in found.call("GET", "/roles").json()["roles"]}
        yield found
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


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
