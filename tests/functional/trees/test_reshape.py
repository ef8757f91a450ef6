"""A host whose tree changes under its servers: the compute service reshapes.

A flat host (a real compute service, 16 vCPUs and 16 GiB on its root) runs
servers, one of them mid-resize (VERIFY_RESIZE); it is then re-described
with two NUMA cells (``[fake_driver] provider_tree``), which hold the VCPU
and MEMORY_MB from then on. Its next inventory check moves every allocation
to the cells in one ``POST /reshaper``, its report makes the conductor's
records follow, and resizes (same host and another host, confirm and revert,
under every strategy), heal and audit all work on the tree as it is now.
"""

import uuid
from typing import Any

import pytest

from resize_sched import resources as rs
from resize_sched.compute import reshape as compute_reshape
from resize_sched.compute.tree import Child
from resize_sched.conductor import audit as audit_mod
from resize_sched.conductor import heal as heal_mod
from resize_sched.conductor import reports
from resize_sched.placement.client import ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
CELLS = [
    Child("numa0", {"VCPU": 8, "MEMORY_MB": 8192}, frozenset({"HW_NUMA_ROOT"})),
    Child("numa1", {"VCPU": 8, "MEMORY_MB": 8192}, frozenset({"HW_NUMA_ROOT"})),
]
SMALL = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
BIG = {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}
HOST = {"vcpus": 16, "memory_mb": 16384, "disk_gb": 200}


def _report(cloud: Any, service: Any) -> None:
    """Deliver ``service``'s report to the conductor, as its RPC handler would."""
    reports.record(
        cloud.db,
        cloud.client,
        "default",
        host=service.host,
        node=service.host,
        rp_uuid=service.provider_uuid,
        inventory=service.inventory,
        provider_generation=service.provider_generation,
        version="1.0",
        children=service.children,
    )


def _capacity(cloud: Any, host: str) -> dict[str, int]:
    """Each class's total over the host's whole tree."""
    out: dict[str, int] = {}
    for rp in cloud.observer.list_resource_providers(in_tree=cloud.hosts[host]):
        for rc, record in cloud.observer.get_inventories(rp["uuid"])[0].items():
            out[rc] = out.get(rc, 0) + record["total"]
    return out


def _where(cloud: Any, held: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    names = {rp: name for name, rp in cloud.hosts.items()}
    return {names.get(rp, rp): res for rp, res in held.items()}


def _on_cells(cloud: Any, consumer: str, host: str = "c1") -> None:
    """The consumer's VCPU and MEMORY_MB are on the host's cells, none on its root."""
    held = cloud.holds(consumer)
    root = held.get(cloud.hosts[host], {})
    assert "VCPU" not in root and "MEMORY_MB" not in root, _where(cloud, held)
    cells = {rp for name, rp in cloud.hosts.items() if name.startswith(f"{host}/")}
    assert any(rp in cells for rp in held), _where(cloud, held)


def _everything(cloud: Any) -> dict[str, Any]:
    """Every consumer's allocations, read from Placement."""
    consumers: dict[str, Any] = {}
    for rp in cloud.hosts.values():
        for consumer in cloud.observer.get_provider_allocations(rp):
            consumers[consumer] = cloud.holds(consumer)
    return consumers


def _reshaped(
    make_cloud: Any, make_compute: Any, strategy: str, *, report: bool = True
) -> tuple[Any, Any, dict]:
    """The cloud after c1's reshape: c1 (two cells), c2 (flat, for other-host
    resizes), servers ``a`` and ``b`` on c1 built flat, ``m`` resized on c1
    to VERIFY_RESIZE before the change."""
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    service = make_compute("c1", compute=dict(HOST))
    cloud.hosts["c1"] = service.provider_uuid
    _report(cloud, service)
    cloud.add_host("c2", vcpus=16, memory_mb=16384, disk_gb=200)
    small = cloud.flavor("small", *SMALL.values())
    big = cloud.flavor("big", *BIG.values())
    servers = {name: cloud.boot(name, small, host="c1") for name in ("a", "b", "m")}
    full = cloud.squat("c2", VCPU=16)  # m's resize stays on c1
    migration, dest = cloud.resize_to_verify(servers["m"], big)
    assert dest.same_host
    cloud.leave(full)
    servers["m-migration"] = migration
    before = rs.total(rs.add_allocations(*(_everything(cloud).values())))

    service.driver.children = list(CELLS)
    service.refresh_inventory()
    service.refresh_tree()
    for child in CELLS:
        found = cloud.observer.list_resource_providers(name=f"c1_{child.name}")
        cloud.hosts[f"c1/{child.name}"] = found[0]["uuid"]
    if not report:  # the conductor has not heard of it yet
        return cloud, service, {"small": small, "big": big, **servers}
    _report(cloud, service)

    # Capacity is the host's, not doubled; the root keeps only the disk.
    assert _capacity(cloud, "c1") == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}
    assert set(cloud.observer.get_inventories(cloud.hosts["c1"])[0]) == {"DISK_GB"}
    for name in ("a", "b", "m"):
        _on_cells(cloud, servers[name].uuid)
    if cloud.holds(migration.uuid):  # legacy: the old flavor, on the source
        _on_cells(cloud, migration.uuid)
    # Nothing was lost or added: every consumer holds what it held, on the cells.
    assert rs.total(rs.add_allocations(*(_everything(cloud).values()))) == before
    cloud.check()
    # A second check finds nothing to do, and costs what a flat host's does.
    count = service.placement.request_count
    assert not service.refresh_inventory()
    assert service.refresh_tree() == 0
    assert service.placement.request_count - count == 2 + 1 + 2 * 2  # root, tree, children
    return cloud, service, {"small": small, "big": big, **servers}


@pytest.mark.parametrize(
    "strategy",
    [s if s == "max_flavor" else pytest.param(s, marks=pytest.mark.slow) for s in STRATEGIES],
)
def test_the_reshape_moves_every_allocation_and_heal_and_audit_keep_them(
    make_cloud: Any, make_compute: Any, strategy: str
) -> None:
    cloud, _service, s = _reshaped(make_cloud, make_compute, strategy)
    held = _everything(cloud)

    report = heal_mod.heal(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT)
    assert report.count(heal_mod.HEALED) == 0, [r.line() for r in report.results]
    assert report.complete, [r.line() for r in report.results]
    assert _everything(cloud) == held

    found = audit_mod.audit(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert found.orphans == [], [o.line() for o in found.orphans]
    assert _everything(cloud) == held

    # The resize in flight ends on the cells, exactly.
    m = s["m"]
    if strategy == "drop_and_reclaim":
        cloud.revert(m)
        assert rs.total(cloud.holds(m.uuid)) == SMALL
    else:
        cloud.confirm(m)
        assert rs.total(cloud.holds(m.uuid)) == BIG
    _on_cells(cloud, m.uuid)
    assert cloud.holds(s["m-migration"].uuid) == {}
    cloud.check()


def test_audit_before_the_conductor_hears_of_the_reshape_deletes_nothing(
    make_cloud: Any, make_compute: Any
) -> None:
    cloud, _service, s = _reshaped(make_cloud, make_compute, "max_flavor", report=False)
    held = _everything(cloud)
    for name in ("a", "b", "m"):
        _on_cells(cloud, s[name].uuid)
    found = audit_mod.audit(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert found.orphans == [], [o.line() for o in found.orphans]
    assert _everything(cloud) == held


def _resize(cloud: Any, server: Any, flavor: Any, *, same_host: bool, decision: str) -> None:
    full = None if same_host else cloud.squat("c1", DISK_GB=1)
    if same_host:
        full = cloud.squat("c2", VCPU=16)
    migration, dest = cloud.resize_to_verify(server, flavor)
    assert dest.same_host == same_host
    cloud.leave(full)
    if decision == "confirm":
        cloud.confirm(server)
        want = BIG
    else:
        cloud.revert(server)
        want = SMALL
    held = cloud.holds(server.uuid)
    assert rs.total(held) == want, _where(cloud, held)
    assert cloud.holds(migration.uuid) == {}
    if "c1/numa0" not in cloud.hosts:  # flat again
        assert set(held) == {cloud.hosts["c1" if decision == "revert" or same_host else "c2"]}
    elif decision == "revert" or same_host:
        _on_cells(cloud, server.uuid)
    else:
        assert set(held) == {cloud.hosts["c2"]}
    cloud.check()


QUICK = {("max_flavor", True, "revert")}


def _matrix() -> Any:
    for strategy in STRATEGIES:
        for same_host in (True, False):
            for decision in ("confirm", "revert"):
                marks = () if (strategy, same_host, decision) in QUICK else (pytest.mark.slow,)
                where = "same" if same_host else "other"
                yield pytest.param(
                    strategy, same_host, decision, marks=marks, id=f"{strategy}-{where}-{decision}"
                )


@pytest.mark.parametrize(("strategy", "same_host", "decision"), list(_matrix()))
def test_a_server_built_before_the_reshape_resizes(
    make_cloud: Any, make_compute: Any, strategy: str, same_host: bool, decision: str
) -> None:
    cloud, _service, s = _reshaped(make_cloud, make_compute, strategy)
    _resize(cloud, s["a"], s["big"], same_host=same_host, decision=decision)
    server = cloud.db.server_get(s["a"].uuid)
    assert not server.needs_heal
    report = heal_mod.heal(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT)
    assert report.count(heal_mod.HEALED) == 0, [r.line() for r in report.results]


def test_cells_removed_again_move_everything_back_to_the_root(
    make_cloud: Any, make_compute: Any
) -> None:
    cloud, service, s = _reshaped(make_cloud, make_compute, "max_flavor")
    cloud.confirm(s["m"])
    service.driver.children = []
    assert service.refresh_inventory()
    service.refresh_tree()
    cells = {cloud.hosts.pop(f"c1/{c.name}") for c in CELLS}
    _report(cloud, service)
    assert not cells & {rp["uuid"] for rp in cloud.observer.list_resource_providers()}
    assert _capacity(cloud, "c1") == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}
    root = cloud.hosts["c1"]
    for name, want in (("a", SMALL), ("b", SMALL), ("m", BIG)):
        assert cloud.holds(s[name].uuid) == {root: want}
    cloud.check()
    _resize(cloud, s["a"], s["big"], same_host=True, decision="revert")
    assert cloud.holds(s["a"].uuid) == {root: SMALL}


def test_a_consumer_written_meanwhile_makes_the_reshape_read_again(
    make_cloud: Any, make_compute: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = make_cloud("max_flavor")
    service = make_compute("c1", compute=dict(HOST))
    cloud.hosts["c1"] = service.provider_uuid
    root = service.provider_uuid
    other = str(uuid.uuid4())
    cloud.observer.put_allocations(other, ConsumerWrite({root: SMALL}, "p", "u", None))
    real = service.placement.reshape
    calls = []

    def racing(inventories: Any, writes: Any) -> None:
        if not calls:  # someone grows the consumer just before our first call
            cloud.observer.put_allocations(other, ConsumerWrite({root: BIG}, "p", "u", 1))
        calls.append(1)
        real(inventories, writes)

    monkeypatch.setattr(service.placement, "reshape", racing)
    service.driver.children = list(CELLS)
    assert service.refresh_inventory()
    assert len(calls) == 2
    held = cloud.holds(other)
    assert rs.total(held) == BIG
    assert set(held[root]) == {"DISK_GB"}
    assert compute_reshape.RESHAPE_CONFLICT_RETRIES >= 1


def test_a_tree_another_service_reshaped_is_not_undone(make_cloud: Any, make_compute: Any) -> None:
    """Another service moves c1's VCPU and MEMORY_MB to NUMA cells of its
    own (through POST /reshaper, the allocations with them): our compute
    service keeps its configured tree flat but never puts the classes back
    on the root, and the conductor's records follow its next report."""
    cloud = make_cloud("max_flavor", resize={"allow_same_host": True})
    service = make_compute("c1", compute=dict(HOST))
    root = cloud.hosts["c1"] = service.provider_uuid
    _report(cloud, service)
    cloud.add_host("c2", vcpus=16, memory_mb=16384, disk_gb=200)
    full = cloud.squat("c2", VCPU=16)
    small = cloud.flavor("small", *SMALL.values())
    big = cloud.flavor("big", *BIG.values())
    a = cloud.boot("a", small, host="c1")
    m = cloud.boot("m", small, host="c1")
    migration, dest = cloud.resize_to_verify(m, big)
    assert dest.same_host
    cloud.leave(full)

    disk = cloud.observer.get_inventories(root)[0]["DISK_GB"]
    _, moved = compute_reshape.plan_and_reshape(
        cloud.observer, "c1", root, {"DISK_GB": disk}, CELLS, mark="CUSTOM_NUMA_SERVICE"
    )
    assert moved
    for child in CELLS:
        cloud.hosts[f"c1/{child.name}"] = cloud.observer.list_resource_providers(
            name=f"c1_{child.name}"
        )[0]["uuid"]
    service.refresh_inventory()
    service.refresh_tree()
    assert _capacity(cloud, "c1") == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}
    assert set(service.inventory) == {"DISK_GB"}
    _report(cloud, service)
    cloud.check()
    for server in (a, m):
        _on_cells(cloud, server.uuid)

    report = heal_mod.heal(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT)
    assert report.count(heal_mod.HEALED) == 0 and report.complete, [
        r.line() for r in report.results
    ]
    found = audit_mod.audit(cloud.db, cloud.client, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert found.orphans == []
    cloud.revert(m)
    assert rs.total(cloud.holds(m.uuid)) == SMALL
    _on_cells(cloud, m.uuid)
    _resize(cloud, a, big, same_host=True, decision="confirm")


@pytest.mark.slow
def test_two_cells_merged_into_one_move_the_second_cells_servers(
    make_cloud: Any, make_compute: Any
) -> None:
    """The root keeps its classes (nothing for the inventory check to see);
    the cell the driver drops is still allocated to: the tree refresh
    reshapes instead of leaving it (and its capacity) beside the new one."""
    cloud, service, s = _reshaped(make_cloud, make_compute, "max_flavor")
    cloud.confirm(s["m"])
    service.driver.children = [Child("numa0", {"VCPU": 16, "MEMORY_MB": 16384})]
    assert not service.refresh_inventory()
    assert service.refresh_tree()
    gone = cloud.hosts.pop("c1/numa1")
    _report(cloud, service)
    assert gone not in {rp["uuid"] for rp in cloud.observer.list_resource_providers()}
    assert _capacity(cloud, "c1") == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}
    cell = cloud.hosts["c1/numa0"]
    for name in ("a", "b", "m"):
        held = cloud.holds(s[name].uuid)
        assert {rc for rc in held[cell]} == {"VCPU", "MEMORY_MB"}, _where(cloud, held)
    cloud.check()
    _resize(cloud, s["b"], s["big"], same_host=True, decision="revert")


def test_a_reshape_cut_short_is_finished_by_the_next_start(
    make_cloud: Any, make_compute: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service dies after creating the cells, before its one reshape
    call; the next start (configured with the cells) finds them, moves
    everything once, and a second check changes nothing."""
    from resize_sched import exception

    cloud = make_cloud("max_flavor")
    first = make_compute("c1", compute=dict(HOST))
    root = cloud.hosts["c1"] = first.provider_uuid
    _report(cloud, first)
    small = cloud.flavor("small", *SMALL.values())
    a = cloud.boot("a", small, host="c1")

    def dies(inventories: Any, writes: Any) -> None:
        raise exception.PlacementUnavailable(method="POST", url="/reshaper", reason="gone")

    monkeypatch.setattr(first.placement, "reshape", dies)
    first.driver.children = list(CELLS)
    with pytest.raises(exception.PlacementUnavailable):
        first.refresh_inventory()
    assert cloud.holds(a.uuid) == {root: SMALL}  # nothing moved; the cells exist, empty
    assert len(cloud.observer.list_resource_providers(in_tree=root)) == 3
    first.stop()

    cells = [f"{c.name}:VCPU=8,MEMORY_MB=8192:HW_NUMA_ROOT" for c in CELLS]
    again = make_compute("c1", compute=dict(HOST), fake_driver={"provider_tree": cells})
    for child in CELLS:
        found = cloud.observer.list_resource_providers(name=f"c1_{child.name}")
        assert len(found) == 1
        cloud.hosts[f"c1/{child.name}"] = found[0]["uuid"]
    assert _capacity(cloud, "c1") == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}
    _on_cells(cloud, a.uuid)
    assert rs.total(cloud.holds(a.uuid)) == SMALL
    assert not again.refresh_inventory()
    assert again.refresh_tree() == 0
    _report(cloud, again)
    cloud.check()


def test_a_host_described_with_cells_has_no_vcpu_or_memory_on_its_root(
    make_compute: Any, placement_client: Any
) -> None:
    cells = [f"{c.name}:VCPU=8,MEMORY_MB=8192:HW_NUMA_ROOT" for c in CELLS]
    service = make_compute("c9", compute=dict(HOST), fake_driver={"provider_tree": cells})
    root = service.provider_uuid
    assert set(placement_client.get_inventories(root)[0]) == {"DISK_GB"}
    assert set(service.inventory) == {"DISK_GB"}
    totals: dict[str, int] = {}
    for rp in placement_client.list_resource_providers(in_tree=root):
        for rc, record in placement_client.get_inventories(rp["uuid"])[0].items():
            totals[rc] = totals.get(rc, 0) + record["total"]
    assert totals == {"VCPU": 16, "MEMORY_MB": 16384, "DISK_GB": 200}


def test_a_flat_hosts_check_costs_what_it_did(make_compute: Any) -> None:
    """Two requests (the root's traits and inventory), nothing for the tree."""
    service = make_compute("c1", compute=dict(HOST))
    count = service.placement.request_count
    assert not service.refresh_inventory()
    assert service.refresh_tree() == 0
    assert service.placement.request_count - count == 2


def test_a_dropped_device_still_allocated_is_kept_not_reshaped(
    make_compute: Any, placement_client: Any
) -> None:
    """No provider takes over its class: nothing to reshape to; the child
    stays (as before) until its allocations are given back."""
    service = make_compute(
        "c1", compute=dict(HOST), fake_driver={"provider_tree": ["gpu0:VGPU=2"]}
    )
    (gpu,) = placement_client.list_resource_providers(name="c1_gpu0")
    consumer = str(uuid.uuid4())
    placement_client.put_allocations(
        consumer, ConsumerWrite({gpu["uuid"]: {"VGPU": 1}}, "p", "u", None)
    )
    service.driver.children = []
    assert not service.refresh_inventory()
    service.refresh_tree(at_start=True)
    assert placement_client.get_allocations(consumer).allocations == {gpu["uuid"]: {"VGPU": 1}}
    assert gpu["uuid"] in service.children
