"""Resizes between shared, dedicated and mixed CPU flavors, against the real Placement.

The hosts' inventory is what a compute service with ``[compute]
cpu_shared_set`` and ``cpu_dedicated_set`` reports
(:func:`resize_sched.compute.inventory.inventory_from_conf`): VCPU for the
shared CPUs, PCPU for the dedicated ones. Each test states what the server,
the migration and each host hold; ``Cloud.check()`` asserts the invariants
of doc/design.rst after every step.

During VERIFY_RESIZE only each host's total usage is asserted (which of
the two consumers holds ``max_flavor``'s excess on its own host is the
strategy's business); after a confirm the server holds exactly the new
flavor, after a revert exactly the old, and the migration nothing.
"""

import pytest

from resize_sched import conf as rs_conf
from resize_sched import resources as rs
from resize_sched.compute.inventory import inventory_from_conf
from tests.functional.fixtures.cloud import expect_no_valid_host

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]

#: name -> (vcpus, memory_mb, disk_gb, extra specs)
FLAVORS = {
    "shared": (2, 1024, 10, {"hw:cpu_policy": "shared"}),
    "dedicated": (2, 2048, 10, {"hw:cpu_policy": "dedicated"}),
    "mixed": (4, 1024, 20, {"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "^0-1"}),
}
#: what each claims, as Nova translates it
CLAIMS = {
    "shared": {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10},
    "dedicated": {"PCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10},
    "mixed": {"VCPU": 2, "PCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 20},
}
#: Each policy once as the old flavor and once as the new (a cycle), to keep
#: the matrix quick; each test resizes twice (revert, then confirm).
#: shared -> dedicated in the default run; the other two directions, whose
#: paths differ only in which classes shrink, with the slow matrices.
PAIRS = [
    ("shared", "dedicated"),
    pytest.param("dedicated", "mixed", marks=pytest.mark.slow),
    pytest.param("mixed", "shared", marks=pytest.mark.slow),
]


def _inventory(cpus: int, shared: str | None, dedicated: str | None, memory_mb: int, disk_gb: int):
    """The records a compute service with these ``[compute]`` options sets."""
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for name, value in (
        ("vcpus", cpus),
        ("cpu_shared_set", shared),
        ("cpu_dedicated_set", dedicated),
        ("memory_mb", memory_mb),
        ("disk_gb", disk_gb),
        ("reserved_host_memory_mb", 0),
    ):
        conf.set_override(name, value, group="compute")
    return inventory_from_conf(conf)


def _host(
    cloud, name: str, *, cpus=16, shared="0-7", dedicated="8-15", memory_mb=16384, disk_gb=500
):
    records = _inventory(cpus, shared, dedicated, memory_mb, disk_gb)
    # NOTE: vcpus=0 adds no VCPU record of the fixture's own: the records are all.
    return cloud.add_host(name, vcpus=0, memory_mb=memory_mb, disk_gb=disk_gb, **records)


def _flavor(cloud, name: str):
    vcpus, memory_mb, disk_gb, specs = FLAVORS[name]
    return cloud.flavor(name, vcpus, memory_mb, disk_gb, extra_specs=specs)


def test_hosts_report_pcpu_and_vcpu_from_the_cpu_sets(make_cloud):
    cloud = make_cloud()
    rp = _host(cloud, "host1", cpus=12, shared="0-3", dedicated="4-11")
    inventory, _ = cloud.observer.get_inventories(rp)
    assert {rc: (r["total"], r["allocation_ratio"]) for rc, r in inventory.items()} == {
        "VCPU": (4, 1.0),
        "PCPU": (8, 1.0),
        "MEMORY_MB": (16384, 1.0),
        "DISK_GB": (500, 1.0),
    }


@pytest.mark.parametrize("name", list(FLAVORS))
def test_a_build_claims_pcpu_and_vcpu_as_nova_translates(make_cloud, name):
    cloud = make_cloud()
    _host(cloud, "host1")
    server = cloud.boot("vm", _flavor(cloud, name))
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", CLAIMS[name])
    assert cloud.usage("host1") == CLAIMS[name]


def test_a_dedicated_build_on_hosts_without_pcpu_is_infeasible_and_says_why(make_cloud):
    cloud = make_cloud()
    _host(cloud, "host1", cpus=8, shared=None, dedicated=None)
    flavor = _flavor(cloud, "dedicated")
    server = cloud.builds.create(name="vm", flavorid=flavor.flavorid, project_id="p", user_id="u")
    err = expect_no_valid_host(lambda: cloud.builds.schedule(server.uuid), "infeasible")
    assert "PCPU:2" in str(err) and "[compute] cpu_dedicated_set" in str(err)
    server = cloud.db.server_get(server.uuid)
    assert server.status == "ERROR"
    assert "PCPU" in server.fault_message and "cpu_dedicated_set" in server.fault_message
    assert cloud.holds(server.uuid) == {}
    assert cloud.usage("host1") == {}
    cloud.check()


def _verify_usage(strategy: str, old: dict, new: dict) -> dict:
    """A same-host resize's usage of its host in VERIFY_RESIZE."""
    return {
        "legacy": rs.add(old, new),
        "drop_and_reclaim": new,
        "max_flavor": rs.maximum(old, new),
    }[strategy]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("old_name, new_name", PAIRS)
def test_same_host_resize_between_cpu_policies(make_cloud, strategy, old_name, new_name):
    cloud = make_cloud(strategy)
    _host(cloud, "host1")
    old, new = CLAIMS[old_name], CLAIMS[new_name]
    f_new = _flavor(cloud, new_name)
    server = cloud.boot("vm", _flavor(cloud, old_name))
    for decision in ("revert", "confirm"):
        migration, dest = cloud.resize_to_verify(server, f_new)
        assert dest.same_host
        assert cloud.usage("host1") == _verify_usage(strategy, old, new)
        getattr(cloud, decision)(server)
        final = new if decision == "confirm" else old
        assert cloud.holds(server.uuid) == cloud.on("host1", final)
        assert cloud.holds(migration.uuid) == {}
        assert cloud.usage("host1") == final


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("old_name, new_name", PAIRS)
def test_other_host_resize_between_cpu_policies(make_cloud, strategy, old_name, new_name):
    cloud = make_cloud(strategy, resize={"allow_same_host": False})
    _host(cloud, "host1")
    _host(cloud, "host2")
    old, new = CLAIMS[old_name], CLAIMS[new_name]
    f_new = _flavor(cloud, new_name)
    server = cloud.boot("vm", _flavor(cloud, old_name), host="host1")
    for decision in ("revert", "confirm"):
        migration, dest = cloud.resize_to_verify(server, f_new)
        assert dest.host == "host2"
        assert cloud.usage("host1") == old
        assert cloud.usage("host2") == new
        assert cloud.holds(migration.uuid) == cloud.on("host1", old)
        getattr(cloud, decision)(server)
        assert cloud.holds(migration.uuid) == {}
        if decision == "revert":
            assert cloud.holds(server.uuid) == cloud.on("host1", old)
            assert cloud.usage("host2") == {}
        else:
            assert cloud.holds(server.uuid) == cloud.on("host2", new)
            assert cloud.usage("host1") == {}


# -- Nova bug 1790204 with dedicated CPUs: a full host resizes in place ------------------

#: As test_resize_strategies' BUG_OLD and BUG_NEW: the host's disk is full, so
#: only the increase fits beside the old flavor; the new flavor is dedicated.
BUG_OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028}
BUG_NEW = {"PCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}


def _bug_cloud(make_cloud, strategy):
    cloud = make_cloud(strategy)
    _host(cloud, "host1", cpus=3, shared="0", dedicated="1-2", memory_mb=8192, disk_gb=1028)
    f_old = cloud.flavor("old", 1, 1024, 1028, extra_specs={"hw:cpu_policy": "shared"})
    f_new = cloud.flavor("new", 2, 2048, 1028, extra_specs={"hw:cpu_policy": "dedicated"})
    server = cloud.boot("vm", f_old)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", BUG_OLD)
    return cloud, server, f_new


def test_shared_to_dedicated_on_a_full_host_legacy_fails_and_keeps_old(make_cloud):
    cloud, server, f_new = _bug_cloud(make_cloud, "legacy")
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    err = expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    assert "DISK_GB:1028" in str(err) and "PCPU:2" in str(err)
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", BUG_OLD)
    assert cloud.holds(migration.uuid) == {}
    server = cloud.db.server_get(server.uuid)
    assert (server.status, server.task_state) == ("ACTIVE", None)
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.error_kind) == ("error", "deferred")


@pytest.mark.parametrize("strategy", ["drop_and_reclaim", "max_flavor"])
@pytest.mark.parametrize("decision", ["confirm", "revert"])
def test_shared_to_dedicated_on_a_full_host_resizes_in_place(make_cloud, strategy, decision):
    cloud, server, f_new = _bug_cloud(make_cloud, strategy)
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.provider == cloud.hosts["host1"] and dest.same_host
    assert cloud.usage("host1") == _verify_usage(strategy, BUG_OLD, BUG_NEW)
    assert cloud.db.server_get(server.uuid).status == "VERIFY_RESIZE"
    getattr(cloud, decision)(server)
    final = BUG_NEW if decision == "confirm" else BUG_OLD
    assert cloud.holds(server.uuid) == cloud.on("host1", final)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == final
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


@pytest.mark.parametrize(
    ("thread_policy", "on_host_with_smt"), [("require", True), ("isolate", False)]
)
def test_thread_policy_picks_the_host_by_its_hyperthreading_trait(
    make_cloud, thread_policy, on_host_with_smt
):
    """``require`` needs HW_CPU_HYPERTHREADING on the host, ``isolate`` a host
    without it (the trait set on the provider, as an operator would)."""
    cloud = make_cloud()
    smt = _host(cloud, "smt")
    _host(cloud, "nosmt")
    traits, generation = cloud.observer.get_traits(smt)
    cloud.observer.put_traits(smt, traits | {"HW_CPU_HYPERTHREADING"}, generation)
    specs = {"hw:cpu_policy": "dedicated", "hw:cpu_thread_policy": thread_policy}
    flavor = cloud.flavor("pinned", 2, 1024, 10, extra_specs=specs)
    for n in range(2):
        server = cloud.boot(f"vm{n}", flavor)
        host = "smt" if on_host_with_smt else "nosmt"
        assert cloud.holds(server.uuid) == cloud.on(
            host, CLAIMS["dedicated"] | {"MEMORY_MB": 1024}
        )
    cloud.check()
