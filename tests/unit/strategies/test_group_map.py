"""The recorded group -> provider map, and the strategies' arithmetic with it."""

from resize_sched import resources as rs
from resize_sched.resources import group_map as gm
from resize_sched.strategies import Holdings, ResizeFacts
from resize_sched.strategies.drop_and_reclaim import DropAndReclaimStrategy
from resize_sched.strategies.legacy import LegacyStrategy
from resize_sched.strategies.max_flavor import MaxFlavorStrategy

ROOT, C1, C2, C3 = "root", "gpu-a", "gpu-b", "gpu-c"
BASE = {"VCPU": 2, "MEMORY_MB": 2048}
A100, T4 = "CUSTOM_VGPU_A100", "CUSTOM_VGPU_T4"


def _groups(*amounts: int, traits: tuple[str, ...] = ()) -> tuple[rs.RequestGroup, ...]:
    return tuple(
        rs.RequestGroup(str(i + 1), {"VGPU": n}, frozenset({traits[i]}) if traits else frozenset())
        for i, n in enumerate(amounts)
    )


def _facts(old, new, original, group_providers, **kw) -> ResizeFacts:
    return ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": sum(old)},
        new={**BASE, "VGPU": sum(new)},
        original=original,
        old_groups=_groups(*old),
        new_groups=_groups(*new),
        group_policy="isolate",
        group_providers=group_providers,
        **kw,
    )


MAP = {"": [ROOT], "1": [C1], "2": [C2]}


def test_max_flavor_grows_group_2_on_group_2s_provider_not_the_first_holder():
    # NOTE: group 1's child comes first: "the first that holds VGPU" is wrong.
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = _facts((1, 1), (1, 2), original, MAP)
    strategy = MaxFlavorStrategy()
    assert strategy.source_placement(facts) == {C2: {"VGPU": 1}}
    assert strategy.source_request(facts) == {"VGPU": 1}
    target = strategy.claim(facts, ROOT, strategy.source_placement(facts))
    assert target.server == {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 2}}


def test_max_flavor_asks_for_a_group_that_grows_though_the_class_total_does_not():
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 2}}
    facts = _facts((1, 2), (2, 1), original, MAP)
    strategy = MaxFlavorStrategy()
    assert facts.increase == {}
    assert strategy.source_request(facts) == {"VGPU": 1}
    assert strategy.source_placement(facts) == {C1: {"VGPU": 1}}


def test_the_unnumbered_increase_stays_on_the_unnumbered_providers():
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = ResizeFacts(
        source=ROOT,
        old={**BASE, "VGPU": 2},
        new={"VCPU": 4, "MEMORY_MB": 2048, "VGPU": 3},
        original=original,
        old_groups=_groups(1, 1),
        new_groups=_groups(2, 1),
        group_policy="isolate",
        group_providers=MAP,
    )
    assert MaxFlavorStrategy().source_placement(facts) == {ROOT: {"VCPU": 2}, C1: {"VGPU": 1}}


def test_without_a_map_the_increase_goes_as_before():
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = _facts((1, 1), (1, 2), original, None)
    assert facts.group_increase() is None
    assert MaxFlavorStrategy().source_placement(facts) == {C1: {"VGPU": 1}}


def test_a_flat_resize_has_no_map_and_is_unchanged():
    facts = ResizeFacts(source=ROOT, old=BASE, new={"VCPU": 4, "MEMORY_MB": 2048})
    strategy = MaxFlavorStrategy()
    assert facts.group_increase() is None
    assert strategy.source_request(facts) == {"VCPU": 2}
    assert strategy.source_placement(facts) == {ROOT: {"VCPU": 2}}
    assert strategy.claim_groups(facts, ROOT, {}, None) is None


def test_the_confirm_shrinks_the_group_that_shrinks():
    # NOTE: group 2's child first, group 1's last: a shrink that takes from
    # the last provider would take group 1's vGPU.
    current = Holdings(server={ROOT: BASE, C2: {"VGPU": 2}, C1: {"VGPU": 2}})
    facts = _facts((1, 2), (2, 1), dict(current.server), MAP, claimed_groups=MAP)
    for strategy in (MaxFlavorStrategy(), LegacyStrategy(), DropAndReclaimStrategy()):
        kept = strategy.confirm(facts, current, ROOT)
        assert kept == Holdings(server={ROOT: BASE, C1: {"VGPU": 2}, C2: {"VGPU": 1}})


def test_the_confirm_drops_a_group_the_new_flavor_no_longer_has():
    current = Holdings(server={ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}})
    facts = _facts((1, 1), (1,), dict(current.server), MAP, claimed_groups={"": [ROOT], "1": [C1]})
    assert MaxFlavorStrategy().confirm(facts, current, ROOT) == Holdings(
        server={ROOT: BASE, C1: {"VGPU": 1}}
    )


def test_max_flavor_same_host_keeps_held_groups_and_maps_new_ones_from_the_candidate():
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = _facts((1, 1), (1, 1, 1), original, MAP)
    mappings = {"": [ROOT], "3": [C3]}
    assert MaxFlavorStrategy().claim_groups(facts, ROOT, {C3: {"VGPU": 1}}, mappings) == {
        "": [ROOT],
        "1": [C1],
        "2": [C2],
        "3": [C3],
    }


def test_another_host_and_the_other_strategies_take_the_candidates_map():
    original = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    facts = _facts((1, 1), (1, 2), original, MAP)
    mappings = {"": ["r2"], "1": ["r2-b"], "2": ["r2-a"]}
    request = {"r2": BASE, "r2-a": {"VGPU": 2}, "r2-b": {"VGPU": 1}}
    assert MaxFlavorStrategy().claim_groups(facts, "r2", request, mappings) == mappings
    same = {"": [ROOT], "1": [C2], "2": [C1]}
    for strategy in (LegacyStrategy(), DropAndReclaimStrategy()):
        assert strategy.claim_groups(facts, ROOT, {}, same) == same


def test_a_candidate_without_mappings_is_read_from_its_allocations():
    facts = _facts((1, 1), (1, 2), {}, MAP)
    request = {"r2": BASE, "r2-a": {"VGPU": 2}, "r2-b": {"VGPU": 1}}
    assert LegacyStrategy().claim_groups(facts, "r2", request, None) == {
        "": ["r2"],
        "1": ["r2-b"],
        "2": ["r2-a"],
    }


def test_derive_reads_an_unambiguous_map():
    held = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 2}}
    assert gm.derive(held, _groups(1, 2), "isolate") == MAP


def test_derive_takes_either_reading_of_groups_asking_for_the_same_thing():
    held = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    assert gm.derive(held, _groups(1, 1), "isolate") == MAP


def test_derive_gives_up_when_groups_that_differ_could_be_swapped():
    held = {ROOT: BASE, C1: {"VGPU": 1}, C2: {"VGPU": 1}}
    assert gm.derive(held, _groups(1, 1, traits=(A100, T4)), "isolate") is None


def test_derive_gives_up_on_a_flat_flavor_or_what_does_not_fit():
    assert gm.derive({ROOT: BASE}, (), None) is None
    assert gm.derive({ROOT: BASE, C1: {"VGPU": 1}}, _groups(1, 1), "isolate") is None


def test_from_mappings_needs_one_provider_for_each_group():
    assert gm.from_mappings({"": [ROOT], "1": [C1]}, ()) is None
    assert gm.from_mappings({"": [ROOT]}, _groups(1)) is None
    assert gm.from_mappings({"": [ROOT], "1": [C1]}, _groups(1)) == {"": [ROOT], "1": [C1]}
