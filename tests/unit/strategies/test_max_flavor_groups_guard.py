"""Guards for max_flavor's per-group increase on the source.

Each test pins one rule a refactor could break in a single line without the
older tests noticing: where a held group grows when a new group is added,
that an unnumbered class still counts when a group is added beside it, that
a held group that does not grow is not asked again, and that the recorded
map wins over the candidate's mappings for a group the server already holds.
"""

from resize_sched import resources as rs
from resize_sched import strategies
from resize_sched.strategies import ResizeFacts

ROOT, C1, C2, C3 = "root", "gpu-a", "gpu-b", "gpu-c"
BASE = {"VCPU": 2, "MEMORY_MB": 2048}


def _vgpus(*amounts: int) -> tuple[rs.RequestGroup, ...]:
    return tuple(rs.RequestGroup(str(i + 1), {"VGPU": n}) for i, n in enumerate(amounts))


def _max_flavor() -> strategies.ClaimStrategy:
    return strategies.get("max_flavor")


def test_adding_a_group_asks_only_for_it_when_no_held_group_grows():
    # Both held groups keep their size: the source is asked for the new
    # group alone, and nothing more on the providers already held.
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 2},
        new={**BASE, "VGPU": 3},
        original=original,
        old_groups=_vgpus(1, 1),
        new_groups=_vgpus(1, 1, 1),
        group_policy="isolate",
        group_providers={"": [ROOT], "1": [C1], "2": [C2]},
    )
    strategy = _max_flavor()
    assert [g.suffix for g in strategy.source_groups(facts)] == ["3"]
    assert strategy.source_placement(facts) == {}
    assert strategy.source_request(facts) == {"VGPU": 1}


def test_adding_a_group_still_asks_for_the_unnumbered_increase():
    # VCPU grows in the unnumbered group while a second vGPU group is added:
    # the source must be asked for both, not the new group alone.
    original = {ROOT: BASE, C1: {"VGPU": 1}}
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 1},
        new={"VCPU": 4, "MEMORY_MB": 2048, "DISK_GB": 10, "VGPU": 2},
        original=original,
        old_groups=_vgpus(1),
        new_groups=_vgpus(1, 1),
        group_policy="isolate",
        group_providers={"": [ROOT], "1": [C1]},
    )
    assert _max_flavor().source_request(facts) == {"VGPU": 1, "VCPU": 2, "DISK_GB": 10}


def test_a_held_group_that_grows_without_its_provider_falls_back_to_its_device():
    # The map does not name group 1's provider and group 1 grows: the map
    # cannot say where, so the growth goes to the first device holding VGPU.
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 2},
        new={**BASE, "VGPU": 4},
        original=original,
        old_groups=_vgpus(1, 1),
        new_groups=_vgpus(2, 1, 1),
        group_policy="isolate",
        group_providers={"": [ROOT], "2": [C2]},
    )
    assert _max_flavor().source_placement(facts) == {C1: {"VGPU": 1}}


def test_without_a_map_a_held_group_grows_on_its_device_not_on_the_root():
    # The root holds an unnumbered vGPU too; group 1's growth still belongs
    # on its device child, not on the root listed first.
    original = {ROOT: {**BASE, "VGPU": 1}, C1: {"VGPU": 1}}
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 2},
        new={**BASE, "VGPU": 4},
        original=original,
        old_groups=_vgpus(1),
        new_groups=_vgpus(2, 1),
        group_policy="isolate",
    )
    assert _max_flavor().source_placement(facts) == {C1: {"VGPU": 1}}


def test_an_unnumbered_amount_that_shrinks_makes_room_for_a_group_on_its_provider():
    # group_policy=none on a flat host: VCPU moves from the unnumbered group
    # to group 1, both on the root, total unchanged: max(old, new) per
    # provider needs nothing more.
    original = {ROOT: {"VCPU": 6, "MEMORY_MB": 2048}}
    old_groups = (rs.RequestGroup("1", {"VCPU": 2}),)
    new_groups = (rs.RequestGroup("1", {"VCPU": 4}),)
    facts = ResizeFacts(
        source=ROOT,
        old={"VCPU": 6, "MEMORY_MB": 2048},
        new={"VCPU": 6, "MEMORY_MB": 2048},
        original=original,
        old_groups=old_groups,
        new_groups=new_groups,
        group_policy="none",
        group_providers={"": [ROOT], "1": [ROOT]},
    )
    strategy = _max_flavor()
    assert strategy.source_request(facts) == {}
    assert strategy.source_placement(facts) == {}


def test_a_same_host_claim_keeps_a_held_group_where_the_map_says():
    # The candidate's mappings name another provider for group 1 (only its
    # increase was asked): the group stays where the server holds it.
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 1},
        new={**BASE, "VGPU": 2},
        original={ROOT: BASE, C1: {"VGPU": 1}},
        old_groups=_vgpus(1),
        new_groups=_vgpus(1, 1),
        group_policy="isolate",
        group_providers={"": [ROOT], "1": [C1]},
    )
    mappings = {"1": [C3], "2": [C2]}
    got = _max_flavor().claim_groups(facts, ROOT, {C2: {"VGPU": 1}}, mappings)
    assert got == {"": [ROOT], "1": [C1], "2": [C2]}
