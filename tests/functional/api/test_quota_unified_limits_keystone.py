"""``[quota] driver = unified_limits`` against a real Keystone (slow).

Keystone runs as in ``test_keystone_real.py``
(:class:`tests.functional.fixtures.keystone.KeystoneServer`). It is set up as
an operator would for unified limits: our service and its endpoint, a
service user with the system ``reader`` role, registered limits under
Nova's resource names and a project's own limits on ``class:VCPU`` and
``class:MEMORY_MB``. Our API reads them through oslo.limit, configured only
by ``[oslo_limit]`` in its configuration file; the servers are built over
the real Placement, so the tests can show that a refused create or resize
holds nothing new there.

Keystone is installed by the ``faults`` tox environment; the module is
skipped where it is not installed.
"""

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from tests.functional.api.harness import ApiHarness
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.keystone import (
    PASSWORD,
    REGION,
    Keystone,
    KeystoneServer,
)
from tests.functional.fixtures.placement import PlacementInProcess

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("keystone") is None,
        reason="the keystone package is not installed (tox -e faults installs it)",
    ),
]

#: Registered limits (every project's default), by Nova's names.
REGISTERED = {
    "servers": 10,
    "class:VCPU": 20,
    "class:MEMORY_MB": 51200,
    "server_metadata_items": 4,
    "server_key_pairs": 5,
    "server_groups": 6,
    "server_group_members": 7,
    "server_injected_files": 1,
    "server_injected_file_content_bytes": 1024,
    "server_injected_file_path_bytes": 64,
}

#: The test project's own limits.
PROJECT_LIMITS = {"class:VCPU": 3, "class:MEMORY_MB": 2048}

SMALL = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}


@dataclass
class Limits:
    """Keystone set up for our endpoint's limits."""

    keystone: Keystone
    endpoint_id: str
    service_id: str
    project_id: str
    user: str
    limit_ids: dict[str, str]


@pytest.fixture(scope="module")
def limits(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Limits]:
    """Keystone with our endpoint, a system reader for it, and the limits."""
    server = KeystoneServer(tmp_path_factory.mktemp("keystone"))
    try:
        keystone = server.start()
        service_id = keystone.register("compute", "resize-sched", "http://127.0.0.1:8774/v2.1")
        endpoints = keystone.call(
            "GET", f"/endpoints?service_id={service_id}&interface=public"
        ).json()["endpoints"]
        user_id = keystone.user("resize-sched")
        keystone.call("PUT", f"/system/users/{user_id}/roles/{keystone.roles['reader']}")
        project_id = keystone.project("limited")
        keystone.call(
            "POST",
            "/registered_limits",
            {
                "registered_limits": [
                    {
                        "service_id": service_id,
                        "region_id": REGION,
                        "resource_name": name,
                        "default_limit": value,
                    }
                    for name, value in REGISTERED.items()
                ]
            },
        )
        created = keystone.call(
            "POST",
            "/limits",
            {
                "limits": [
                    {
                        "service_id": service_id,
                        "region_id": REGION,
                        "project_id": project_id,
                        "resource_name": name,
                        "resource_limit": value,
                    }
                    for name, value in PROJECT_LIMITS.items()
                ]
            },
        ).json()["limits"]
        yield Limits(
            keystone,
            endpoints[0]["id"],
            service_id,
            project_id,
            "resize-sched",
            {row["resource_name"]: row["id"] for row in created},
        )
    finally:
        server.stop()


@dataclass
class Stack:
    """The API reading Keystone's limits, and a cloud over the same database."""

    api: ApiHarness
    cloud: Cloud
    project: str

    @property
    def token(self) -> str:
        return f"alice:{self.project}"

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        kw.setdefault("token", self.token)
        return self.api.request(method, path, body, **kw)


@pytest.fixture
def stack(
    api: ApiHarness,
    placement: PlacementInProcess,
    limits: Limits,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Stack:
    from oslo_limit import limit

    # NOTE: oslo.limit keeps one Keystone connection per process; this
    # module's Keystone is not the one an earlier test may have used.
    monkeypatch.setattr(limit, "_SDK_CONNECTION", None)
    config = tmp_path / "resize_sched.conf"
    config.write_text(
        "[api]\nauth_strategy = noauth2\n"
        "[quota]\ndriver = unified_limits\n"
        "[oslo_limit]\n"
        f"endpoint_id = {limits.endpoint_id}\n"
        "auth_type = password\n"
        f"auth_url = {limits.keystone.url}/v3\n"
        f"username = {limits.user}\n"
        f"password = {PASSWORD}\n"
        "user_domain_id = default\n"
        "system_scope = all\n"
    )
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)], default_config_files=[])
    api.conf = conf
    api.app = build_app(conf, api.db, api.conductor)
    cloud = Cloud(placement, api.db)
    cloud.add_host("h1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("h2", vcpus=8, memory_mb=8192, disk_gb=100)
    for name, vcpus, memory_mb in (
        ("small", 1, 512),
        ("triple", 3, 512),
        ("quad", 4, 512),
        ("wide", 1, 4096),
        ("double", 2, 1024),
    ):
        cloud.flavor(name, vcpus, memory_mb, 10, flavorid=name)
    return Stack(api, cloud, limits.project_id)


def _boot(stack: Stack, flavor: str) -> Any:
    builds = stack.cloud.builds
    server = builds.create(
        name="vm", flavorid=flavor, project_id=stack.project, user_id="alice", force_hosts=("h1",)
    )
    builds.schedule(server.uuid)
    return builds.spawned(server.uuid)


def _placement_unchanged(stack: Stack, server: Any) -> None:
    cloud = stack.cloud
    assert cloud.holds(server.uuid) == cloud.on("h1", SMALL)
    assert cloud.usage("h1") == SMALL
    assert cloud.usage("h2") == {}
    cloud.check()


def test_quota_sets_show_keystones_limits(stack: Stack, limits: Limits) -> None:
    path = f"/v2.1/os-quota-sets/{stack.project}"
    shown = stack.request("GET", path, version="2.57").json["quota_set"]
    assert shown == {
        "id": stack.project,
        "instances": 10,
        "cores": 3,
        "ram": 2048,
        "metadata_items": 4,
        "key_pairs": 5,
        "server_groups": 6,
        "server_group_members": 7,
    }
    older = stack.request("GET", path, version="2.1").json["quota_set"]
    assert (older["injected_files"], older["injected_file_path_bytes"]) == (1, 64)
    assert older["floating_ips"] == -1
    defaults = stack.request("GET", f"{path}/defaults", version="2.57").json["quota_set"]
    assert (defaults["cores"], defaults["ram"], defaults["instances"]) == (20, 51200, 10)
    absolute = stack.request("GET", "/v2.1/limits").json["limits"]["absolute"]
    assert (absolute["maxTotalCores"], absolute["maxTotalRAMSize"]) == (3, 2048)

    # An update is accepted, changes nothing here and nothing in Keystone.
    before = stack.api.snapshot()
    updated = stack.request("PUT", path, {"quota_set": {"cores": 50}}, token="admin:admin")
    assert (updated.status_int, updated.json["quota_set"]["cores"]) == (200, 3)
    assert stack.request("DELETE", path, token="admin:admin").status_int == 202
    assert stack.api.snapshot() == before
    kept = limits.keystone.call("GET", f"/limits?project_id={stack.project}").json()["limits"]
    assert {row["resource_name"]: row["resource_limit"] for row in kept} == PROJECT_LIMITS


def test_a_create_over_class_vcpu_is_403_and_holds_nothing(stack: Stack, limits: Limits) -> None:
    server = _boot(stack, "small")
    _placement_unchanged(stack, server)
    before = stack.api.snapshot()
    body = {"server": {"name": "vm2", "flavorRef": "triple"}}
    refused = stack.request("POST", "/v2.1/servers", body)
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == (
        "Quota exceeded for cores: Requested 3, but already used 1 of 3 cores"
    )
    assert stack.api.snapshot() == before
    stack.api.assert_no_cast()
    _placement_unchanged(stack, server)

    # Keystone raises the project's limit: the next create is read against it.
    vcpu = limits.limit_ids["class:VCPU"]
    limits.keystone.call("PATCH", f"/limits/{vcpu}", {"limit": {"resource_limit": 4}})
    try:
        accepted = stack.request("POST", "/v2.1/servers", body)
        assert accepted.status_int == 202
        assert stack.api.next_cast().method == "build_server"
    finally:
        limits.keystone.call("PATCH", f"/limits/{vcpu}", {"limit": {"resource_limit": 3}})


@pytest.mark.parametrize(
    ("flavor", "message"),
    [
        ("quad", "Quota exceeded for cores: Requested 3, but already used 1 of 3 cores"),
        ("wide", "Quota exceeded for ram: Requested 3584, but already used 512 of 2048 ram"),
    ],
)
def test_a_resize_over_the_project_limit_is_403_before_any_migration(
    stack: Stack, flavor: str, message: str
) -> None:
    server = _boot(stack, "small")
    before = stack.api.snapshot()
    path = f"/v2.1/servers/{server.uuid}/action"
    refused = stack.request("POST", path, {"resize": {"flavorRef": flavor}})
    assert refused.status_int == 403
    assert refused.json["forbidden"]["message"] == message
    assert stack.api.db.migration_list(server_uuid=server.uuid) == []
    assert stack.api.snapshot() == before
    stack.api.assert_no_cast()
    _placement_unchanged(stack, server)
    # Within both limits (3 cores, 2048 MiB) the resize is accepted.
    accepted = stack.request("POST", path, {"resize": {"flavorRef": "double"}})
    assert accepted.status_int == 202
    assert stack.api.next_cast().method == "resize_server"
    assert len(stack.api.db.migration_list(server_uuid=server.uuid)) == 1
