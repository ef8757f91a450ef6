"""Guards for the compute side of a reshape: an exact fit is a fit, a split
takes the last unit too, and a child named like another service's is never
created or filled by us.

Placement is stood in for by a small in-memory client holding one tree, so
``plan_and_reshape`` runs whole, as the compute service calls it.
"""

from typing import Any

from resize_sched import resources as rs
from resize_sched.compute import reshape
from resize_sched.compute.tree import Child
from resize_sched.placement.client import ConsumerAllocations

HOST, ROOT, MARK = "h1", "root", "CUSTOM_RESIZE_SCHED_CHILD"
SERVER = "server-1"
DISK_ONLY = rs.inventory_records({"DISK_GB": 100})


class _Tree:
    """One provider tree, its traits, inventories and consumers."""

    def __init__(self) -> None:
        self.providers: dict[str, dict[str, Any]] = {}
        self.allocations: dict[str, dict[str, dict[str, int]]] = {}
        self.created: list[str] = []
        self.reshaped: Any = None

    def add(self, uuid: str, name: str, inventory: dict[str, int], traits=()) -> None:
        self.providers[uuid] = {
            "uuid": uuid,
            "name": name,
            "traits": set(traits),
            "inventory": rs.inventory_records(inventory),
        }

    # -- the client's calls the reshape makes ----------------------------
    def list_resource_providers(self, in_tree: str) -> list[dict[str, Any]]:
        return [{"uuid": p["uuid"], "name": p["name"]} for p in self.providers.values()]

    def get_traits(self, uuid: str) -> tuple[frozenset[str], int]:
        return frozenset(self.providers[uuid]["traits"]), 1

    def get_inventories(self, uuid: str) -> tuple[dict[str, Any], int]:
        return dict(self.providers[uuid]["inventory"]), 1

    def get_provider_allocations(self, uuid: str) -> dict[str, dict[str, int]]:
        return {c: dict(a[uuid]) for c, a in self.allocations.items() if uuid in a}

    def create_resource_provider(self, name: str, parent_provider_uuid: str) -> dict[str, Any]:
        uuid = f"new-{name}"
        self.add(uuid, name, {})
        self.created.append(name)
        return {"uuid": uuid, "generation": 0}

    def put_traits(self, uuid: str, traits: frozenset[str], generation: int) -> int:
        self.providers[uuid]["traits"] = set(traits)
        return generation + 1

    def get_allocations(self, consumer: str) -> ConsumerAllocations:
        return ConsumerAllocations(self.allocations.get(consumer, {}), 1, "p", "u")

    def reshape(self, inventories: Any, writes: Any) -> None:
        self.reshaped = (inventories, writes)


def _flat_host_with_a_server() -> _Tree:
    tree = _Tree()
    tree.add(ROOT, HOST, {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 100})
    tree.allocations[SERVER] = {ROOT: {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}}
    return tree


def _moved_to(tree: _Tree) -> dict[str, dict[str, int]]:
    _inventories, writes = tree.reshaped
    return writes[SERVER].allocations


def test_a_guest_that_fills_a_cell_exactly_moves_there_whole() -> None:
    tree = _flat_host_with_a_server()
    # numa0 holds the guest exactly; numa1 has more VCPU but too little
    # memory: the guest stays whole on numa0, not split over both.
    children = [
        Child("numa0", {"VCPU": 4, "MEMORY_MB": 4096}),
        Child("numa1", {"VCPU": 8, "MEMORY_MB": 2048}),
    ]
    reshape.plan_and_reshape(tree, HOST, ROOT, DISK_ONLY, children, mark=MARK)
    assert _moved_to(tree) == {
        ROOT: {"DISK_GB": 10},
        f"new-{HOST}_numa0": {"VCPU": 4, "MEMORY_MB": 4096},
    }


def test_a_split_guest_takes_its_last_unit_from_the_next_cell() -> None:
    tree = _flat_host_with_a_server()
    # No cell holds 4 VCPU: 3 on one, the last 1 on the other.
    children = [
        Child("numa0", {"VCPU": 3, "MEMORY_MB": 8192}),
        Child("numa1", {"VCPU": 1, "MEMORY_MB": 8192}),
    ]
    reshape.plan_and_reshape(tree, HOST, ROOT, DISK_ONLY, children, mark=MARK)
    moved = _moved_to(tree)
    assert rs.total(moved) == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}
    assert moved[f"new-{HOST}_numa1"]["VCPU"] == 1
    assert moved[f"new-{HOST}_numa0"]["VCPU"] == 3


def test_a_child_named_like_another_services_is_never_created_or_filled() -> None:
    tree = _flat_host_with_a_server()
    # Another service's child (no mark) already carries the name our
    # numa0 would take: we create our numa1 only, and the guest goes there.
    tree.add("theirs", f"{HOST}_numa0", {"VCPU": 8, "MEMORY_MB": 8192})
    children = [
        Child("numa0", {"VCPU": 8, "MEMORY_MB": 8192}),
        Child("numa1", {"VCPU": 4, "MEMORY_MB": 4096}),
    ]
    reshape.plan_and_reshape(tree, HOST, ROOT, DISK_ONLY, children, mark=MARK)
    assert tree.created == [f"{HOST}_numa1"]
    moved = _moved_to(tree)
    assert "theirs" not in moved
    assert moved[f"new-{HOST}_numa1"] == {"VCPU": 4, "MEMORY_MB": 4096}


def test_a_class_another_services_child_holds_stays_on_our_root_if_the_root_has_it() -> None:
    # Their child holds VGPU and so does our root: the root keeps its VGPU.
    tree = _Tree()
    tree.add(ROOT, HOST, {"VCPU": 8, "MEMORY_MB": 8192, "VGPU": 2})
    tree.add("theirs", "gpu-of-theirs", {"VGPU": 4})
    wanted = rs.inventory_records({"VCPU": 8, "MEMORY_MB": 8192, "VGPU": 2})
    effective, written = reshape.plan_and_reshape(tree, HOST, ROOT, wanted, [], mark=MARK)
    assert written is False
    assert set(effective) == {"VCPU", "MEMORY_MB", "VGPU"}
    # A class only their child holds is left to them.
    tree = _Tree()
    tree.add(ROOT, HOST, {"VCPU": 8, "MEMORY_MB": 8192})
    tree.add("theirs", "gpu-of-theirs", {"VGPU": 4})
    effective, _ = reshape.plan_and_reshape(tree, HOST, ROOT, wanted, [], mark=MARK)
    assert set(effective) == {"VCPU", "MEMORY_MB"}
