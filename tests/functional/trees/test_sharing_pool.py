"""A resize that adds a class the server never held, taken from a sharing pool.

The hosts here have no ``DISK_GB`` of their own: their disk is a pool
provider (``MISC_SHARES_VIA_AGGREGATE``) in an aggregate with them. A
boot-from-volume style flavor (disk 0) holds nothing on the pool; a resize to
a flavor with a disk must find the pool, on the same host and on another host
sharing it, with every strategy. Also: the Placement facts the source query
relies on, a full pool (``deferred``, holdings restored exactly), a pool too
small ever (``infeasible``), and the Placement requests the resize costs.
"""

import pytest

from resize_sched.scheduler import hosts
from tests.functional.fixtures.cloud import expect_no_valid_host
from tests.functional.trees.topology import add_tree_host

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
OLD = {"VCPU": 2, "MEMORY_MB": 2048}  # disk 0: the root disk is a volume
#: Two resizes: the disk alone added (nothing asked of the host itself under
#: max_flavor), and the disk added beside more VCPU.
NEWS = {
    "disk": {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20},
    "disk-vcpu": {"VCPU": 3, "MEMORY_MB": 2048, "DISK_GB": 20},
}


def _cloud(make_cloud, strategy, hosts=("host1",), pool_gb=100, **resize):
    cloud = make_cloud(strategy, resize={"allow_same_host": True, **resize})
    for name in hosts:
        add_tree_host(cloud, "sharing", name, vcpus=8, memory_mb=8192, disk_gb=pool_gb)
    old = cloud.flavor("bfv", OLD["VCPU"], OLD["MEMORY_MB"], 0)
    server = cloud.boot("vm", old, host="host1")
    cloud.check()
    assert cloud.holds(server.uuid) == {cloud.hosts["host1"]: OLD}
    return cloud, server


def _new_flavor(cloud, kind):
    amounts = NEWS[kind]
    return cloud.flavor(f"new-{kind}", amounts["VCPU"], amounts["MEMORY_MB"], amounts["DISK_GB"])


def _on(cloud, host, amounts):
    """``amounts`` on ``host``: the disk on the pool, the rest on the root."""
    out = {cloud.hosts[host]: {rc: n for rc, n in amounts.items() if rc != "DISK_GB"}}
    if amounts.get("DISK_GB"):
        out[cloud.hosts["pool"]] = {"DISK_GB": amounts["DISK_GB"]}
    return out


def _candidates(cloud, params):
    """Placement's raw answer to ``GET /allocation_candidates`` (1.36)."""
    resp = cloud.observer._request("GET", "/allocation_candidates", (1, 36), params=params)
    return [
        {rp: a["resources"] for rp, a in ar["allocations"].items()}
        for ar in resp.json()["allocation_requests"]
    ]


# -- the Placement facts ----------------------------------------------------------


def test_in_tree_leaves_the_sharing_pool_out(make_cloud):
    """``in_tree=<root>`` and ``in_treeN=<root>`` leave a sharing provider out;
    ``in_treeN=<pool>`` beside ``in_tree=<root>`` is answered from both; a
    provider listing by aggregate, trait and ``resources`` names the pool
    while it has room."""
    cloud = make_cloud("max_flavor")
    for name in ("host1", "host2"):
        add_tree_host(cloud, "sharing", name, vcpus=8, memory_mb=8192, disk_gb=100)
    host1, host2, pool = cloud.hosts["host1"], cloud.hosts["host2"], cloud.hosts["pool"]
    disk = {pool: {"DISK_GB": 20}}

    assert _candidates(cloud, [("resources", "DISK_GB:20"), ("in_tree", host1)]) == []
    # With no in_tree, the pool answers (for either host: the same request).
    assert disk in _candidates(cloud, [("resources", "DISK_GB:20")])
    assert (
        _candidates(
            cloud,
            [("resources", "VCPU:1"), ("in_tree", host1), ("resources1", "DISK_GB:20")]
            + [("in_tree1", host1)],
        )
        == []
    )
    both = _candidates(
        cloud,
        [("resources", "VCPU:1"), ("in_tree", host1), ("resources1", "DISK_GB:20")]
        + [("in_tree1", pool)],
    )
    assert both == [{host1: {"VCPU": 1}, **disk}]

    aggregates, _ = cloud.observer.get_aggregates(host1)
    listing = [("member_of", "in:" + ",".join(sorted(aggregates)))]
    listing += [("required", "MISC_SHARES_VIA_AGGREGATE")]
    found = cloud.observer._request(
        "GET", "/resource_providers", (1, 23), params=[*listing, ("resources", "DISK_GB:20")]
    )
    assert [rp["uuid"] for rp in found.json()["resource_providers"]] == [pool]
    cloud.squat("pool", DISK_GB=90)
    full = cloud.observer._request(
        "GET", "/resource_providers", (1, 23), params=[*listing, ("resources", "DISK_GB:20")]
    )
    assert full.json()["resource_providers"] == []
    assert host2  # shares the pool: each answer above is anchored at either host


# -- same host ---------------------------------------------------------------------


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("kind", sorted(NEWS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_host_resize_finds_the_pool(make_cloud, strategy, kind, decision):
    cloud, server = _cloud(make_cloud, strategy)
    new = NEWS[kind]
    cloud.client.reset_request_count()
    migration, dest = cloud.resize_to_verify(server, _new_flavor(cloud, kind))
    assert dest.same_host
    held = cloud.holds(server.uuid)
    if strategy == "max_flavor":
        # max(old, new) provider by provider: the disk on the pool.
        assert held == _on(cloud, "host1", new)
        assert cloud.holds(migration.uuid) == {}
    elif strategy == "legacy":
        assert held == _on(cloud, "host1", new)
        assert cloud.holds(migration.uuid) == _on(cloud, "host1", OLD)
    else:
        assert held == _on(cloud, "host1", new)
        assert cloud.holds(migration.uuid) == {}

    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == _on(cloud, "host1", new)
        expected = new
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == _on(cloud, "host1", OLD)
        expected = OLD
    assert cloud.holds(migration.uuid) == {}
    pool_used = cloud.observer.get_usages(cloud.hosts["pool"]).get("DISK_GB", 0)
    assert pool_used == expected.get("DISK_GB", 0)
    row = cloud.db.server_get(server.uuid)
    assert row.status == "ACTIVE"
    assert row.allocations in (None, cloud.holds(server.uuid))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_same_host_resize_preferred_finds_the_pool(make_cloud, strategy):
    """``prefer_same_host`` asks the source alone first, every strategy."""
    cloud, server = _cloud(make_cloud, strategy, hosts=("host1", "host2"), prefer_same_host=True)
    migration, dest = cloud.resize_to_verify(server, _new_flavor(cloud, "disk"))
    assert dest.same_host
    assert cloud.holds(server.uuid) == _on(cloud, "host1", NEWS["disk"])
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == _on(cloud, "host1", NEWS["disk"])
    assert cloud.holds(migration.uuid) == {}


def test_max_flavor_source_query_costs(make_cloud):
    """The requests of a same-host max_flavor resize that adds the disk
    alone: the query over every other host and, beside it on the
    scheduler's pool, for the source its aggregates, the sharing providers
    of those with room, and its own usage (which weighs it); then the
    claim's one write. A flat host's same resize takes 3 (no aggregates, no
    listing)."""
    cloud, server = _cloud(make_cloud, "max_flavor")
    migration = cloud.resizes.begin(server.uuid, _new_flavor(cloud, "disk").flavorid)
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    assert dest.same_host
    assert cloud.client.request_count == 5, cloud.client.request_count
    cloud.check()


# -- another host on the same pool ---------------------------------------------------


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_resize_to_another_host_on_the_pool(make_cloud, strategy, decision):
    cloud, server = _cloud(make_cloud, strategy, hosts=("host1", "host2"))
    cloud.conf.set_override("allow_same_host", False, group="resize")
    new = NEWS["disk"]
    migration, dest = cloud.resize_to_verify(server, _new_flavor(cloud, "disk"))
    assert dest.host == "host2"
    assert cloud.holds(server.uuid) == _on(cloud, "host2", new)
    assert cloud.holds(migration.uuid) == _on(cloud, "host1", OLD)
    if decision == "confirm":
        cloud.confirm(server)
        assert cloud.holds(server.uuid) == _on(cloud, "host2", new)
    else:
        cloud.revert(server)
        assert cloud.holds(server.uuid) == _on(cloud, "host1", OLD)
    assert cloud.holds(migration.uuid) == {}


# -- no room on the pool -------------------------------------------------------------


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_full_pool_is_deferred_and_restores_exactly(make_cloud, strategy):
    cloud, server = _cloud(make_cloud, strategy, pool_gb=40)
    cloud.squat("pool", DISK_GB=30)
    migration = cloud.resizes.begin(server.uuid, _new_flavor(cloud, "disk").flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    cloud.check()
    assert cloud.holds(server.uuid) == _on(cloud, "host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pool_too_small_is_infeasible(make_cloud, strategy):
    cloud, server = _cloud(make_cloud, strategy, pool_gb=10)
    migration = cloud.resizes.begin(server.uuid, _new_flavor(cloud, "disk").flavorid)
    expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "infeasible")
    cloud.check()
    assert cloud.holds(server.uuid) == _on(cloud, "host1", OLD)
    assert cloud.holds(migration.uuid) == {}


def test_a_required_trait_checks_the_source_and_finds_the_pool(make_cloud):
    """Traits live in Placement alone: the source is checked for them (one
    listing), then judged with its pool as above."""
    cloud, server = _cloud(make_cloud, "max_flavor")
    host1 = cloud.hosts["host1"]
    traits, generation = cloud.observer.get_traits(host1)
    cloud.observer.put_traits(host1, [*traits, "CUSTOM_FAST"], generation)
    specs = {"trait:CUSTOM_FAST": "required"}
    old = cloud.flavor("bfv-fast", 2, 2048, 0, extra_specs=specs)
    new = cloud.flavor("disk-fast", 2, 2048, 20, extra_specs=specs)
    server = cloud.boot("vm-fast", old, host="host1")
    migration, dest = cloud.resize_to_verify(server, new)
    assert dest.same_host
    assert cloud.holds(server.uuid) == _on(cloud, "host1", NEWS["disk"])
    cloud.revert(server)
    assert cloud.holds(server.uuid) == _on(cloud, "host1", OLD)
    assert cloud.holds(migration.uuid) == {}


def test_a_disabled_source_is_not_chosen_for_the_pool(make_cloud):
    """A disabled source takes no new work, pool or not: the other host
    sharing the pool is chosen, with no request about the source."""
    cloud, server = _cloud(make_cloud, "max_flavor", hosts=("host1", "host2"))
    # NOTE: as os-services does: the service row and the provider's trait.
    hosts.set_disabled(cloud.observer, cloud.deps.scheduler.owner_trait, "host1", True)
    cloud.db.service_set_disabled(cloud.db.service_get_by_host("host1").uuid, True)
    migration = cloud.resizes.begin(server.uuid, _new_flavor(cloud, "disk").flavorid)
    cloud.client.reset_request_count()
    dest = cloud.resizes.schedule(migration.uuid)
    assert dest.host == "host2"
    # The query over every other host and the claim: the source's report
    # says it is disabled, so nothing is asked about it.
    assert cloud.client.request_count == 2, cloud.client.request_count
    cloud.check()
    assert cloud.holds(server.uuid) == _on(cloud, "host2", NEWS["disk"])
    assert cloud.holds(migration.uuid) == _on(cloud, "host1", OLD)
