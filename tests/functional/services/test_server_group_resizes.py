"""Server groups under every claim strategy, end to end over RabbitMQ.

The case the project exists for: a member of a strict **affinity** group on
a full host can only be resized where its group is. ``legacy`` asks that
host for the whole new flavor beside the old one and fails as Nova does
(NoValidHost, the old allocation restored); ``max_flavor`` and
``drop_and_reclaim`` resize it in place. The same holds for an
**anti-affinity** member whose every other host holds a member. A soft
policy only weighs: the same resize moves to the free host.

Real daemons (:func:`tests.functional.fixtures.deployment.rabbit_deployment`):
the API, a conductor and two compute services on a private RabbitMQ virtual
host, a real Placement over HTTP. The claim strategy is switched between
tests by editing the config and sending the API SIGHUP. The exact
allocations per provider and resource class are asserted after every step.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.functional.fixtures.deployment import rabbit_deployment, wait_for, wait_status

pytestmark = pytest.mark.rabbit

# host1 is the roomier: a first member boots there. Two small members fill
# it to 1024 MB free: the new flavor fits only in the free room plus the old.
HOSTS = {"host1": 3072, "host2": 2560}
OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}

OPTIONS = """\
[resize]
claim_strategy = max_flavor
allow_same_host = true
[filter_scheduler]
# Pulls a soft-affinity member harder than the RAM, CPU and disk weighers push.
soft_affinity_weight_multiplier = 10
"""


class Cloud:
    """The deployment, with the calls these tests make."""

    def __init__(self, deployed: dict[str, Any]) -> None:
        self.d = deployed
        self.conn = deployed["conn"]
        self.client = deployed["client"]
        self.hosts = deployed["hosts"]
        self.endpoint = f"http://127.0.0.1:{deployed['api_port']}/v2.1"
        self.strategy = "max_flavor"
        self.old = self.conn.compute.create_flavor(name="old", vcpus=1, ram=1024, disk=10)
        self.new = self.conn.compute.create_flavor(name="new", vcpus=2, ram=2048, disk=20)

    def api(self, method: str, path: str, body: Any = None, version: str = "2.64") -> Any:
        response = requests.request(
            method,
            self.endpoint + path,
            json=body,
            headers={"X-Auth-Token": "admin:admin", "OpenStack-API-Version": f"compute {version}"},
            timeout=30,
        )
        return response

    def group(self, policy: str) -> str:
        response = self.api(
            "POST", "/os-server-groups", {"server_group": {"name": policy, "policy": policy}}
        )
        assert response.status_code == 200, response.text
        return response.json()["server_group"]["id"]

    def boot(self, name: str, group: str | None = None) -> Any:
        body: dict[str, Any] = {"server": {"name": name, "flavorRef": self.old.id}}
        if group:
            body["os:scheduler_hints"] = {"group": group}
        response = self.api("POST", "/servers", body)
        assert response.status_code == 202, response.text
        server = self.conn.compute.get_server(response.json()["server"]["id"])
        server = wait_status(self.conn, server, "ACTIVE")
        self.check()
        return server

    def use(self, strategy: str) -> None:
        """The strategy new resizes take: the config edited, the API sent SIGHUP."""
        if strategy == self.strategy:
            return
        daemons = self.d["daemons"]
        config = daemons.workdir / "services.conf"
        config.write_text(
            config.read_text().replace(
                f"claim_strategy = {self.strategy}", f"claim_strategy = {strategy}"
            )
        )
        before = daemons.log("api").lower().count("reload")
        daemons.procs["api"].send_signal(signal.SIGHUP)
        wait_for(lambda: daemons.log("api").lower().count("reload") > before, "the API to reload")
        self.strategy = strategy

    def holds(self, consumer: str) -> dict[str, dict[str, int]]:
        return self.client.get_allocations(consumer).allocations

    def on(self, host: str, amounts: dict[str, int]) -> dict[str, dict[str, int]]:
        return {self.hosts[host]: amounts}

    def usage(self, host: str) -> dict[str, int]:
        return self.client.get_usages(self.hosts[host])

    def migration(self, server: Any) -> Any:
        return max(self.d["db"].migration_list(server_uuid=server.id), key=lambda m: m.id)

    def check(self) -> None:
        self.d["check"]()

    def clear(self) -> None:
        """Delete every server and group: the next test starts empty."""
        for server in list(self.conn.compute.servers()):
            self.conn.compute.delete_server(server)
            self.conn.compute.wait_for_delete(server, wait=60, interval=0.1)
        for group in self.api("GET", "/os-server-groups?all_projects=1").json()["server_groups"]:
            self.api("DELETE", f"/os-server-groups/{group['id']}")
        self.check()
        assert self.usage("host1") == {} and self.usage("host2") == {}


def _total(*flavors: dict[str, int]) -> dict[str, int]:
    return {rc: sum(f[rc] for f in flavors) for rc in flavors[0]}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    workdir = tmp_path_factory.mktemp("server-group-resizes")
    with rabbit_deployment(workdir, HOSTS, OPTIONS) as deployed:
        yield Cloud(deployed)


@pytest.fixture
def fresh(cloud: Cloud) -> Iterator[Cloud]:
    yield cloud
    cloud.clear()


def _affinity_pair(cloud: Cloud) -> tuple[Any, Any]:
    group = cloud.group("affinity")
    mover, other = cloud.boot("mover", group), cloud.boot("other", group)
    assert (mover.compute_host, other.compute_host) == ("host1", "host1")
    assert cloud.usage("host1") == _total(OLD, OLD)
    return mover, other


def test_legacy_fails_as_nova_for_a_strict_affinity_member_on_a_full_host(fresh: Cloud) -> None:
    cloud = fresh
    cloud.use("legacy")
    mover, other = _affinity_pair(cloud)
    cloud.conn.compute.resize_server(mover, cloud.new.id)
    mover = wait_status(cloud.conn, mover, "ACTIVE")
    migration = cloud.migration(mover)
    assert (migration.status, migration.error_kind) == ("error", "deferred")
    # Restored to the unit: the old flavor on host1, nothing on the migration.
    assert cloud.holds(mover.id) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.holds(other.id) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == _total(OLD, OLD)
    assert cloud.usage("host2") == {}
    assert mover.flavor["original_name"] == "old"
    cloud.check()


@pytest.mark.parametrize(
    ("strategy", "decision"),
    [
        ("max_flavor", "confirm"),
        ("max_flavor", "revert"),
        ("drop_and_reclaim", "confirm"),
        ("drop_and_reclaim", "revert"),
    ],
)
def test_a_strict_affinity_member_on_a_full_host_resizes_in_place(
    fresh: Cloud, strategy: str, decision: str
) -> None:
    cloud = fresh
    cloud.use(strategy)
    mover, other = _affinity_pair(cloud)
    cloud.conn.compute.resize_server(mover, cloud.new.id)
    mover = wait_status(cloud.conn, mover, "VERIFY_RESIZE")
    migration = cloud.migration(mover)
    assert (migration.source_host, migration.dest_host) == ("host1", "host1")
    # Both strategies hold max(old, new) = new for the server, nothing more.
    assert cloud.holds(mover.id) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == _total(NEW, OLD)
    assert cloud.usage("host2") == {}
    cloud.check()

    if decision == "confirm":
        cloud.conn.compute.confirm_server_resize(mover)
        expected = NEW
    else:
        cloud.conn.compute.revert_server_resize(mover)
        expected = OLD
    mover = wait_status(cloud.conn, mover, "ACTIVE")
    assert mover.compute_host == "host1"
    assert cloud.holds(mover.id) == cloud.on("host1", expected)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.holds(other.id) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == _total(expected, OLD)
    assert cloud.usage("host2") == {}
    cloud.check()


@pytest.mark.parametrize("strategy", ["legacy", "max_flavor"])
def test_an_anti_affinity_member_whose_other_hosts_hold_members(
    fresh: Cloud, strategy: str
) -> None:
    """host2 holds the other member, host1 is full (a server in no group
    beside the mover): legacy fails, max_flavor resizes in place."""
    cloud = fresh
    cloud.use(strategy)
    group = cloud.group("anti-affinity")
    mover, other = cloud.boot("mover", group), cloud.boot("other", group)
    assert (mover.compute_host, other.compute_host) == ("host1", "host2")
    filler = cloud.boot("filler")
    assert filler.compute_host == "host1"
    assert cloud.usage("host1") == _total(OLD, OLD)

    cloud.conn.compute.resize_server(mover, cloud.new.id)
    if strategy == "legacy":
        mover = wait_status(cloud.conn, mover, "ACTIVE")
        assert cloud.migration(mover).status == "error"
        assert cloud.holds(mover.id) == cloud.on("host1", OLD)
        assert cloud.usage("host1") == _total(OLD, OLD)
        assert cloud.usage("host2") == OLD
        cloud.check()
        return
    mover = wait_status(cloud.conn, mover, "VERIFY_RESIZE")
    migration = cloud.migration(mover)
    assert migration.dest_host == "host1"
    assert cloud.holds(mover.id) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == _total(NEW, OLD)
    assert cloud.usage("host2") == OLD
    cloud.check()
    cloud.conn.compute.confirm_server_resize(mover)
    mover = wait_status(cloud.conn, mover, "ACTIVE")
    assert cloud.holds(mover.id) == cloud.on("host1", NEW)
    assert cloud.usage("host1") == _total(NEW, OLD)
    cloud.check()


def test_a_soft_affinity_member_only_weighs(fresh: Cloud) -> None:
    """The soft-affinity weigher keeps the members together on host1, but
    never refuses a host: legacy's resize of a member moves to host2."""
    cloud = fresh
    cloud.use("legacy")
    group = cloud.group("soft-affinity")
    mover, other = cloud.boot("mover", group), cloud.boot("other", group)
    assert (mover.compute_host, other.compute_host) == ("host1", "host1")
    cloud.conn.compute.resize_server(mover, cloud.new.id)
    mover = wait_status(cloud.conn, mover, "VERIFY_RESIZE")
    migration = cloud.migration(mover)
    assert migration.dest_host == "host2"
    assert cloud.holds(mover.id) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == _total(OLD, OLD)
    assert cloud.usage("host2") == NEW
    cloud.check()
    cloud.conn.compute.revert_server_resize(mover)
    mover = wait_status(cloud.conn, mover, "ACTIVE")
    assert cloud.holds(mover.id) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host2") == {}
    cloud.check()
