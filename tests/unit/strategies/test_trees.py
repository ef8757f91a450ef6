"""The strategies on a host that is a tree of providers: a vGPU on a child,
a disk on a sharing provider, VCPU and RAM split over NUMA children.

What the server holds is a map provider -> class -> amount; each phase must
keep each amount on the provider that holds it.
"""

import pytest

from resize_sched import resources as rs
from resize_sched import strategies
from resize_sched.strategies import Holdings, ResizeFacts

ROOT = "root-rp"
GPU = "gpu-child"
POOL = "disk-pool"
DST = "dest-rp"
OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20, "VGPU": 1}
NEW = {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40, "VGPU": 1}
ORIGINAL = {ROOT: {"VCPU": 2, "MEMORY_MB": 2048}, GPU: {"VGPU": 1}, POOL: {"DISK_GB": 20}}
FACTS = ResizeFacts(source=ROOT, old=OLD, new=NEW, original=ORIGINAL)


def test_max_flavor_asks_each_provider_for_its_own_increase() -> None:
    strategy = strategies.load("max_flavor")
    assert strategy.source_request(FACTS) == {"MEMORY_MB": 2048, "DISK_GB": 20}
    assert strategy.source_placement(FACTS) == {ROOT: {"MEMORY_MB": 2048}, POOL: {"DISK_GB": 20}}


def test_max_flavor_same_host_holds_max_per_provider_then_shrinks_per_provider() -> None:
    strategy = strategies.load("max_flavor")
    claimed = strategy.claim(FACTS, ROOT, strategy.source_placement(FACTS))
    assert claimed == Holdings(
        server={ROOT: {"VCPU": 2, "MEMORY_MB": 4096}, GPU: {"VGPU": 1}, POOL: {"DISK_GB": 40}}
    )
    assert strategy.confirm(FACTS, claimed, ROOT) == claimed
    assert strategy.revert(FACTS, claimed, ROOT) == Holdings(server=ORIGINAL)


def test_a_shrink_is_taken_from_the_provider_that_holds_the_class() -> None:
    strategy = strategies.load("max_flavor")
    facts = ResizeFacts(
        source=ROOT,
        old=NEW,
        new=OLD,
        original=strategies.Holdings(
            server={ROOT: {"VCPU": 2, "MEMORY_MB": 4096}, GPU: {"VGPU": 1}, POOL: {"DISK_GB": 40}}
        ).server,
    )
    assert strategy.source_placement(facts) == {}
    held = strategy.claim(facts, ROOT, {})
    assert strategy.confirm(facts, held, ROOT) == Holdings(server=ORIGINAL)


@pytest.mark.parametrize("name", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_restore_and_other_host_revert_give_back_every_provider(name: str) -> None:
    strategy = strategies.load(name)
    assert strategy.restore(FACTS) == Holdings(server=ORIGINAL)
    elsewhere = {DST: {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 40}, "dst-gpu": {"VGPU": 1}}
    claimed = strategy.claim(FACTS, DST, elsewhere)
    assert claimed.server == elsewhere
    assert strategy.revert(FACTS, claimed, DST) == Holdings(server=ORIGINAL)


def test_drop_and_reclaim_same_host_confirm_keeps_the_candidate_as_claimed() -> None:
    strategy = strategies.load("drop_and_reclaim")
    on_tree = {ROOT: {"VCPU": 2, "MEMORY_MB": 4096}, GPU: {"VGPU": 1}, POOL: {"DISK_GB": 40}}
    claimed = strategy.claim(FACTS, ROOT, on_tree)
    assert claimed == Holdings(server=on_tree)
    assert strategy.confirm(FACTS, claimed, ROOT) == claimed


def test_a_class_the_server_does_not_hold_yet_is_left_to_placement() -> None:
    facts = ResizeFacts(
        source=ROOT, old={"VCPU": 1}, new={"VCPU": 1, "VGPU": 1}, original={ROOT: {"VCPU": 1}}
    )
    assert strategies.load("max_flavor").source_placement(facts) == {}


def test_shrink_takes_from_the_last_holder_and_never_adds() -> None:
    numa = {"numa0": {"VCPU": 2, "MEMORY_MB": 1024}, "numa1": {"VCPU": 2, "MEMORY_MB": 1024}}
    assert rs.shrink(numa, {"VCPU": 3, "MEMORY_MB": 2048}) == {
        "numa0": {"VCPU": 2, "MEMORY_MB": 1024},
        "numa1": {"VCPU": 1, "MEMORY_MB": 1024},
    }
    assert rs.shrink(numa, {"VCPU": 8}) == {"numa0": {"VCPU": 2}, "numa1": {"VCPU": 2}}


def test_spread_needs_a_holder_for_every_class() -> None:
    assert rs.spread({ROOT: {"VCPU": 1}, GPU: {"VGPU": 1}}, {"VGPU": 1}) == {GPU: {"VGPU": 1}}
    assert rs.spread({ROOT: {"VCPU": 1}}, {"VGPU": 1}) is None
