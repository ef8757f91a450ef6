"""``resize-sched-manage host show HOST``: a host's provider tree, with owners.

Run in-process through :func:`resize_sched.cmd.manage.main` against the
real Placement and a fresh database: a NUMA-split host whose cells are ours,
with a vGPU child of ours and another service's child under the root.
"""

import uuid
from typing import Any

import pytest

from resize_sched.placement.client import ConsumerWrite, child_trait
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import Cloud
from tests.functional.trees.topology import BANDWIDTH, add_child

MARK = child_trait(DEFAULT_OWNER_TRAIT)


def _report_children(cloud: Cloud, host: str, *names: str) -> None:
    """Record ``host``'s report with its children ``names``, as its service sends it."""
    client = cloud.observer
    rp = cloud.hosts[host]
    inventory, generation = client.get_inventories(rp)
    children = {}
    for name in names:
        child = cloud.hosts[f"{host}/{name}"]
        records, _ = client.get_inventories(child)
        traits, _ = client.get_traits(child)
        children[child] = {"name": f"{host}_{name}", "inventory": records, "traits": traits}
    cloud.db.compute_node_report(
        host=host,
        node=host,
        rp_uuid=rp,
        inventory=inventory,
        provider_generation=generation,
        children=children,
    )


def test_host_show_prints_the_tree_with_owners_and_usage(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud("max_flavor")
    root = cloud.add_host("c1", vcpus=0, memory_mb=0, disk_gb=100)
    cell0 = add_child(
        cloud, "c1", "numa0", {"VCPU": 4, "MEMORY_MB": 4096}, ("HW_NUMA_ROOT",), ours=True
    )
    cell1 = add_child(
        cloud,
        "c1",
        "numa1",
        {"VCPU": {"total": 4, "allocation_ratio": 4.0}, "MEMORY_MB": 4096},
        ("HW_NUMA_ROOT",),
        ours=True,
    )
    gpu = add_child(cloud, "c1", "pgpu0", {"VGPU": 4}, ours=True)
    bridge = add_child(cloud, "c1", "br-ex", {BANDWIDTH: 1000}, ("CUSTOM_PHYSNET_PUBLIC",))
    _report_children(cloud, "c1", "numa0", "numa1")  # pgpu0 missing from the report
    cloud.observer.put_allocations(
        str(uuid.uuid4()),
        ConsumerWrite(
            {root: {"DISK_GB": 10}, cell0: {"VCPU": 2, "MEMORY_MB": 1024}}, "p", "u", None
        ),
    )
    code, out, err = run(cloud)("host", "show", "c1")
    assert code == 0, err
    node = cloud.db.compute_node_get(root)
    assert out == [
        f"Host c1: last reported {node.reported_at.isoformat(timespec='seconds')}, "
        "2 child provider(s) of its own",
        f"  root c1 ({root}): ours",
        "    inventory: DISK_GB 10/100 used",
        f"    traits: {DEFAULT_OWNER_TRAIT}",
        f"    child c1_br-ex ({bridge}): another service's",
        "      inventory: NET_BW_EGR_KILOBIT_PER_SEC 0/1000 used",
        "      traits: CUSTOM_PHYSNET_PUBLIC",
        f"    child c1_numa0 ({cell0}): ours",
        "      inventory: MEMORY_MB 1024/4096 used, VCPU 2/4 used",
        f"      traits: {MARK}, HW_NUMA_ROOT",
        f"    child c1_numa1 ({cell1}): ours",
        "      inventory: MEMORY_MB 0/4096 used, VCPU 0/4 used (ratio 4)",
        f"      traits: {MARK}, HW_NUMA_ROOT",
        f"    child c1_pgpu0 ({gpu}): ours, not in its last report",
        "      inventory: VGPU 0/4 used",
        f"      traits: {MARK}",
    ]

    # A reported child that has since lost our trait is flagged.
    cloud.observer.update_traits(cell1, remove=[MARK])
    code, out, _ = run(cloud)("host", "show", "c1")
    assert f"    child c1_numa1 ({cell1}): another service's" in out
    assert out[-1] == f"  reported child c1_numa1 ({cell1}): no longer ours in Placement"


def test_host_show_refuses_an_unknown_host_and_has_help(
    make_cloud: Any, run: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud = make_cloud("max_flavor")
    code, out, err = run(cloud)("host", "show", "nowhere")
    assert (code, out) == (1, [])
    assert "nowhere" in err
    code, out, _ = run(cloud)("host", "show", "--help")
    assert code == 0
    text = " ".join(" ".join(out).split())
    assert "provider tree" in text and "another service's" in text
