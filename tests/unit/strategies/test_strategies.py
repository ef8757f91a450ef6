"""Each built-in strategy against the strategy tables of doc/design.rst, phase by phase.

The strategies are pure functions, so these tests need no Placement; the
functional tests check the same targets against the real one.
"""

import pytest

from resize_sched import exception, strategies
from resize_sched import resources as rs
from resize_sched.strategies import Holdings, ResizeFacts

SRC = "source-rp"
DST = "dest-rp"
OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}
MAX = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}
FACTS = ResizeFacts(source=SRC, old=OLD, new=NEW)
NEW_ON_DST = {DST: NEW}
NEW_ON_SRC = {SRC: NEW}


def test_installed_lists_the_three_builtins() -> None:
    assert {"legacy", "drop_and_reclaim", "max_flavor"} <= set(strategies.installed())


@pytest.mark.parametrize("name", ["legacy", "drop_and_reclaim", "max_flavor"])
def test_load_returns_the_named_strategy(name: str) -> None:
    strategy = strategies.load(name)
    assert isinstance(strategy, strategies.ClaimStrategy)
    assert strategy.name == name


def test_unknown_strategy_lists_installed_names() -> None:
    with pytest.raises(exception.StrategyNotFound) as err:
        strategies.load("max_flavour")
    message = str(err.value)
    assert "max_flavour" in message
    for name in ("legacy", "drop_and_reclaim", "max_flavor"):
        assert name in message


def test_facts_default_original_and_increase() -> None:
    assert FACTS.original == {SRC: OLD}
    assert FACTS.increase == {"VCPU": 1, "MEMORY_MB": 1024}
    shrink = ResizeFacts(source=SRC, old=NEW, new=OLD)
    assert shrink.increase == {}


class TestLegacy:
    s = strategies.load("legacy")

    def test_prepare_moves_old_to_migration(self) -> None:
        assert self.s.prepare(FACTS) == Holdings(server={}, migration={SRC: OLD})

    def test_queries_ask_new_everywhere(self) -> None:
        assert self.s.destination_request(FACTS) == NEW
        assert self.s.source_request(FACTS) == NEW

    def test_claim_same_host_stacks_new_on_old(self) -> None:
        assert self.s.claim(FACTS, SRC, NEW_ON_SRC) == Holdings(
            server={SRC: NEW}, migration={SRC: OLD}
        )

    def test_claim_other_host(self) -> None:
        assert self.s.claim(FACTS, DST, NEW_ON_DST) == Holdings(
            server={DST: NEW}, migration={SRC: OLD}
        )

    def test_confirm_and_revert(self) -> None:
        current = Holdings(server={DST: NEW}, migration={SRC: OLD})
        assert self.s.confirm(FACTS, current, DST) == Holdings(server={DST: NEW})
        assert self.s.revert(FACTS, current, DST) == Holdings(server={SRC: OLD})
        same = Holdings(server={SRC: NEW}, migration={SRC: OLD})
        assert self.s.confirm(FACTS, same, SRC) == Holdings(server={SRC: NEW})
        assert self.s.revert(FACTS, same, SRC) == Holdings(server={SRC: OLD})


class TestDropAndReclaim:
    s = strategies.load("drop_and_reclaim")

    def test_prepare_drops_everything(self) -> None:
        assert self.s.prepare(FACTS) == Holdings()

    def test_queries_ask_new_everywhere(self) -> None:
        assert self.s.source_request(FACTS) == NEW
        assert self.s.destination_request(FACTS) == NEW

    def test_claim_same_host_migration_holds_nothing(self) -> None:
        assert self.s.claim(FACTS, SRC, NEW_ON_SRC) == Holdings(server={SRC: NEW})

    def test_claim_other_host_reclaims_old_on_source(self) -> None:
        assert self.s.claim(FACTS, DST, NEW_ON_DST) == Holdings(
            server={DST: NEW}, migration={SRC: OLD}
        )

    def test_confirm_same_host_changes_nothing(self) -> None:
        current = Holdings(server={SRC: NEW})
        assert self.s.confirm(FACTS, current, SRC) == current

    def test_revert_same_host_back_to_old(self) -> None:
        assert self.s.revert(FACTS, Holdings(server={SRC: NEW}), SRC) == Holdings(
            server={SRC: OLD}
        )

    def test_restore(self) -> None:
        assert self.s.restore(FACTS) == Holdings(server={SRC: OLD})


class TestMaxFlavor:
    s = strategies.load("max_flavor")

    def test_prepare_moves_nothing(self) -> None:
        assert self.s.prepare(FACTS) == Holdings(server={SRC: OLD})

    def test_source_is_asked_only_the_increase(self) -> None:
        assert self.s.source_request(FACTS) == {"VCPU": 1, "MEMORY_MB": 1024}
        assert self.s.destination_request(FACTS) == NEW

    def test_source_fits_without_asking_when_shrinking(self) -> None:
        assert self.s.source_request(ResizeFacts(source=SRC, old=NEW, new=OLD)) == {}

    def test_claim_same_host_holds_max(self) -> None:
        increase = {SRC: {"VCPU": 1, "MEMORY_MB": 1024}}
        assert self.s.claim(FACTS, SRC, increase) == Holdings(server={SRC: MAX})

    def test_claim_same_host_mixed_resize_holds_per_class_max_split(self) -> None:
        # max(old, new) on the host: the server holds exactly the new flavor,
        # the migration the excess, so that a confirm only empties the migration.
        facts = ResizeFacts(
            source=SRC, old={"VCPU": 4, "MEMORY_MB": 512}, new={"VCPU": 2, "MEMORY_MB": 1024}
        )
        assert facts.increase == {"MEMORY_MB": 512}
        target = self.s.claim(facts, SRC, {SRC: facts.increase})
        assert target == Holdings(server={SRC: facts.new}, migration={SRC: {"VCPU": 2}})
        held = rs.add_allocations(target.server, target.migration)
        assert held == {SRC: {"VCPU": 4, "MEMORY_MB": 1024}}

    def test_claim_same_host_shrink_hands_the_excess_to_the_migration(self) -> None:
        facts = ResizeFacts(source=SRC, old=NEW, new=OLD)
        assert self.s.claim(facts, SRC, {}) == Holdings(
            server={SRC: OLD}, migration={SRC: {"VCPU": 1, "MEMORY_MB": 1024}}
        )

    def test_confirm_same_host_of_the_split_claim_only_empties_the_migration(self) -> None:
        facts = ResizeFacts(
            source=SRC, old={"VCPU": 4, "MEMORY_MB": 512}, new={"VCPU": 2, "MEMORY_MB": 1024}
        )
        current = self.s.claim(facts, SRC, {SRC: facts.increase})
        assert self.s.confirm(facts, current, SRC) == Holdings(server=current.server)

    def test_revert_same_host_of_the_split_claim_gives_back_old(self) -> None:
        facts = ResizeFacts(
            source=SRC, old={"VCPU": 4, "MEMORY_MB": 512}, new={"VCPU": 2, "MEMORY_MB": 1024}
        )
        current = self.s.claim(facts, SRC, {SRC: facts.increase})
        assert self.s.revert(facts, current, SRC) == Holdings(server={SRC: facts.old})

    def test_claim_other_host(self) -> None:
        assert self.s.claim(FACTS, DST, NEW_ON_DST) == Holdings(
            server={DST: NEW}, migration={SRC: OLD}
        )

    def test_confirm_same_host_claimed_before_the_split_shrinks_to_new(self) -> None:
        facts = ResizeFacts(
            source=SRC, old={"VCPU": 4, "MEMORY_MB": 512}, new={"VCPU": 2, "MEMORY_MB": 1024}
        )
        current = Holdings(server={SRC: {"VCPU": 4, "MEMORY_MB": 1024}})
        assert self.s.confirm(facts, current, SRC) == Holdings(server={SRC: facts.new})

    def test_revert_same_host_shrinks_to_old(self) -> None:
        current = Holdings(server={SRC: MAX})
        assert self.s.revert(FACTS, current, SRC) == Holdings(server={SRC: OLD})

    def test_other_host_confirm_drops_migration(self) -> None:
        current = Holdings(server={DST: NEW}, migration={SRC: OLD})
        assert self.s.confirm(FACTS, current, DST) == Holdings(server={DST: NEW})


def test_holdings_normalise_and_round_trip() -> None:
    h = Holdings(server={SRC: {"VCPU": 1, "DISK_GB": 0}, DST: {"VCPU": 0}}, migration={})
    assert h.server == {SRC: {"VCPU": 1}}
    assert Holdings.from_dict(h.to_dict()) == h
