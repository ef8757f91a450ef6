"""TransitionExecutor against the real Placement and a real database.

A server is booted and a resize begun through the cloud harness, so the
migration row carries real holdings and consumer generations; the tests then
drive the executor directly with explicit targets and read the outcome back
from Placement through a separate client.
"""

from collections.abc import Callable
from typing import Any

import pytest

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.placement.client import ConsumerWrite, PlacementClient
from resize_sched.placement.executor import TransitionExecutor
from resize_sched.strategies import Holdings
from tests.functional.fixtures.cloud import PROJECT, USER, Cloud
from tests.functional.fixtures.placement import PlacementInProcess

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
DEAD_ENDPOINT = "http://127.0.0.1:1/placement"


class Spy:
    """Records every request a real client makes, as ``(method, path)``."""

    def __init__(self, client: PlacementClient) -> None:
        self.calls: list[tuple[str, str]] = []
        real = client._request

        def request(method: str, path: str, version: Any, **kwargs: Any) -> Any:
            self.calls.append((method, path))
            return real(method, path, version, **kwargs)

        client._request = request  # type: ignore[method-assign]

    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] in ("PUT", "POST", "DELETE")]

    def reads(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] == "GET"]


class Rig:
    """One server on host1 with a resize begun; an executor with its own client."""

    def __init__(self, cloud: Cloud, placement: PlacementInProcess, conflict_retries: int):
        self.cloud = cloud
        self.h1 = cloud.add_host("host1", vcpus=4, memory_mb=8192, disk_gb=100)
        self.h2 = cloud.add_host("host2", vcpus=4, memory_mb=8192, disk_gb=100)
        f_old = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"])
        f_new = cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"])
        self.server = cloud.boot("vm", f_old, host="host1")
        self.migration_uuid = cloud.resizes.begin(self.server.uuid, f_new.flavorid).uuid
        self.client = placement.client()
        self.client.max_version  # noqa: B018 - negotiate now, so counts are exact
        self.client.reset_request_count()
        self.spy = Spy(self.client)
        self.executor = TransitionExecutor(self.client, cloud.db, conflict_retries)

    @property
    def migration(self) -> Any:
        return self.cloud.db.migration_get(self.migration_uuid)

    def apply(self, phase: str, target: Holdings | Callable[[Holdings], Holdings]) -> Any:
        return self.executor.apply(self.migration, phase, target)

    def held(self) -> Holdings:
        return Holdings(
            server=self.cloud.holds(self.server.uuid),
            migration=self.cloud.holds(self.migration_uuid),
        )

    def generations(self) -> tuple[int | None, int | None]:
        obs = self.cloud.observer
        return (
            obs.get_allocations(self.server.uuid).generation,
            obs.get_allocations(self.migration_uuid).generation,
        )

    def usages(self) -> tuple[dict, dict]:
        return self.cloud.usage("host1"), self.cloud.usage("host2")

    def journal(self) -> list[tuple[int, str, str]]:
        return [(e.seq, e.phase, e.state) for e in self.cloud.db.journal_list(self.migration_uuid)]

    def someone_else_writes_server(self, allocations: dict) -> None:
        """Another writer (not this executor) replaces the server's allocations."""
        other = self.cloud.observer
        current = other.get_allocations(self.server.uuid)
        other.put_allocations(
            self.server.uuid, ConsumerWrite(allocations, PROJECT, USER, current.generation)
        )


@pytest.fixture
def rig(make_cloud: Callable[..., Cloud], placement: PlacementInProcess) -> Rig:
    return Rig(make_cloud("max_flavor"), placement, conflict_retries=3)


def _gens(server: int | None, migration: int | None) -> dict:
    return {"server": server, "migration": migration}


# -- journal ---------------------------------------------------------------------------


def test_begin_records_holdings_so_the_first_write_needs_no_read(rig: Rig) -> None:
    assert rig.migration.holdings == {
        "server": {rig.h1: OLD},
        "migration": {},
        "generations": _gens(1, None),
    }
    assert rig.generations() == (1, None)


def test_applied_transition_journals_intended_then_applied(rig: Rig) -> None:
    target = Holdings(migration={rig.h1: OLD})
    migration = rig.apply("prepare", target)

    entries = rig.cloud.db.journal_list(rig.migration_uuid)
    assert len(entries) == 1
    (entry,) = entries
    assert (entry.seq, entry.phase, entry.state, entry.detail) == (1, "prepare", "applied", None)
    assert entry.before == {
        "server": {rig.h1: OLD},
        "migration": {},
        "generations": _gens(1, None),
    }
    assert entry.target == {"server": {}, "migration": {rig.h1: OLD}}
    assert rig.cloud.db.journal_pending() == []

    # The row remembers what is held now and at which generations.
    expected = {"server": {}, "migration": {rig.h1: OLD}, "generations": _gens(None, 1)}
    assert migration.holdings == expected
    assert rig.migration.holdings == expected
    assert rig.held() == target
    assert rig.generations() == (None, 1)


def test_each_transition_gets_the_next_journal_entry(rig: Rig) -> None:
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    rig.apply("confirm", Holdings(server={rig.h2: NEW}))
    entries = rig.cloud.db.journal_list(rig.migration_uuid)
    assert rig.journal() == [
        (1, "prepare", "applied"),
        (2, "claim", "applied"),
        (3, "confirm", "applied"),
    ]
    # Each entry starts where the previous one ended.
    assert entries[1].before == {
        "server": {},
        "migration": {rig.h1: OLD},
        "generations": _gens(None, 1),
    }
    assert entries[2].before == {
        "server": {rig.h2: NEW},
        "migration": {rig.h1: OLD},
        "generations": _gens(1, 2),  # the claim was anchored to the migration
    }
    assert entries[2].target == {"server": {rig.h2: NEW}, "migration": {}}


def test_no_op_transition_writes_and_journals_nothing(rig: Rig) -> None:
    before_row = rig.migration.holdings
    migration = rig.apply("prepare", Holdings(server={rig.h1: OLD}))
    assert rig.client.request_count == 0
    assert rig.spy.calls == []
    assert rig.journal() == []
    assert migration.holdings == before_row
    assert rig.generations() == (1, None)
    # A callable target that keeps everything is a no-op too.
    rig.apply("again", lambda current: current)
    assert rig.client.request_count == 0
    assert rig.journal() == []


# -- PUT for one consumer, POST for two, no reads ---------------------------------------


def test_one_consumer_uses_put_two_consumers_use_post(rig: Rig) -> None:
    m = rig.migration_uuid
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))  # both change
    assert rig.spy.calls == [("POST", "/allocations")]
    assert rig.generations() == (None, 1)

    # Only the server changes, but it is created: a write with no generation
    # to check is anchored to the migration, unchanged, in the same request.
    rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    assert rig.spy.calls[1:] == [("POST", "/allocations")]
    assert rig.generations() == (1, 2)
    assert rig.held() == Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})

    rig.apply("confirm", Holdings(server={rig.h2: NEW}))  # migration only
    assert rig.spy.calls[2:] == [("PUT", f"/allocations/{m}")]
    assert rig.generations() == (1, None)
    assert rig.held() == Holdings(server={rig.h2: NEW})
    assert rig.usages() == ({}, NEW)


def test_tracked_generations_need_zero_reads(rig: Rig) -> None:
    steps = [
        ("prepare", Holdings(migration={rig.h1: OLD})),
        ("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})),
        ("reschedule", Holdings(server={rig.h1: rs.maximum(OLD, NEW)})),
        ("revert", Holdings(server={rig.h1: OLD})),
        ("again", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})),
        ("confirm", Holdings(server={rig.h2: NEW})),
    ]
    for phase, target in steps:
        rig.apply(phase, target)
        assert rig.held() == target
    assert rig.client.request_count == len(steps)
    assert rig.spy.reads() == []
    assert len(rig.spy.writes()) == len(steps)
    assert [state for _, _, state in rig.journal()] == ["applied"] * len(steps)
    # What the executor tracked is what Placement says.
    server_gen, migration_gen = rig.generations()
    assert rig.migration.holdings["generations"] == _gens(server_gen, migration_gen)
    assert (server_gen, migration_gen) == (4, None)


# -- generation conflicts ---------------------------------------------------------------


def test_conflict_on_a_creating_write_is_re_read_and_retried_to_exactly_the_target(
    rig: Rig,
) -> None:
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    # Someone else creates the server consumer the executor believes is empty.
    rig.someone_else_writes_server({rig.h2: {"VCPU": 1}})
    rig.spy.calls.clear()
    rig.client.reset_request_count()

    target = Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})
    migration = rig.apply("claim", target)

    s, m = rig.server.uuid, rig.migration_uuid
    assert rig.spy.calls == [
        ("POST", "/allocations"),  # refused: generation null, consumer exists
        ("GET", f"/allocations/{s}"),
        ("GET", f"/allocations/{m}"),
        ("PUT", f"/allocations/{s}"),  # it exists now: its own generation anchors it
    ]
    assert rig.client.request_count == 4
    assert rig.held() == target
    assert rig.usages() == (OLD, NEW)
    assert rig.journal() == [
        (1, "prepare", "applied"),
        (2, "claim", "abandoned"),
        (3, "claim", "applied"),
    ]
    abandoned = rig.cloud.db.journal_list(rig.migration_uuid)[1]
    assert "consumer generation conflict" in abandoned.detail.lower()
    assert migration.holdings["generations"] == _gens(2, 1)
    assert rig.generations() == (2, 1)


def test_conflict_on_post_is_re_read_and_retried_to_exactly_the_target(rig: Rig) -> None:
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    rig.someone_else_writes_server({rig.h2: rs.add(NEW, {"VCPU": 1})})
    assert rig.generations() == (2, 2)
    rig.spy.calls.clear()

    target = Holdings(server={rig.h1: OLD})
    entries_before = len(rig.journal())
    rig.apply("revert", target)

    s, m = rig.server.uuid, rig.migration_uuid
    assert rig.spy.calls == [
        ("POST", "/allocations"),
        ("GET", f"/allocations/{s}"),
        ("GET", f"/allocations/{m}"),
        ("POST", "/allocations"),
    ]
    assert rig.held() == target
    assert rig.usages() == (OLD, {})
    assert rig.journal()[entries_before:] == [(3, "revert", "abandoned"), (4, "revert", "applied")]
    assert rig.migration.holdings == {
        "server": {rig.h1: OLD},
        "migration": {},
        "generations": _gens(3, None),
    }
    assert rig.generations() == (3, None)


def test_callable_target_is_re_evaluated_after_a_conflict(rig: Rig) -> None:
    seen: list[Holdings] = []

    def move_server_to_host2(current: Holdings) -> Holdings:
        seen.append(current)
        return Holdings(server={rig.h2: rs.total(current.server)})

    rig.apply("prepare", Holdings(server={rig.h1: OLD}, migration={rig.h1: OLD}))
    rig.someone_else_writes_server({rig.h1: NEW})
    rig.apply("move", move_server_to_host2)
    # Evaluated on the tracked holdings, then on what the re-read found: the
    # server moves what the other writer gave it, not what was tracked.
    assert seen == [
        Holdings(server={rig.h1: OLD}, migration={rig.h1: OLD}),
        Holdings(server={rig.h1: NEW}, migration={rig.h1: OLD}),
    ]
    assert rig.held() == Holdings(server={rig.h2: NEW})
    assert rig.usages() == ({}, NEW)
    assert rig.journal() == [
        (1, "prepare", "applied"),
        (2, "move", "abandoned"),
        (3, "move", "applied"),
    ]


def test_conflict_retries_are_bounded(
    make_cloud: Callable[..., Cloud], placement: PlacementInProcess
) -> None:
    rig = Rig(make_cloud("max_flavor"), placement, conflict_retries=0)
    # Force a stale generation into the row: the server is really at 1.
    holdings = dict(rig.migration.holdings, generations=_gens(7, None))
    rig.cloud.db.migration_update(rig.migration_uuid, holdings=holdings)
    usages = rig.usages()

    with pytest.raises(exception.PlacementConflict) as err:
        rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    assert err.value.kwargs["placement_code"] == "placement.concurrent_update"
    assert rig.spy.calls == [("POST", "/allocations")]  # sent once, no re-read
    assert rig.journal() == [(1, "claim", "abandoned")]
    assert rig.migration.holdings is None  # the next apply reads first
    assert rig.held() == Holdings(server={rig.h1: OLD})
    assert rig.usages() == usages
    assert rig.generations() == (1, None)


def test_giving_up_on_conflicts_leaves_no_stale_holdings(
    make_cloud: Callable[..., Cloud], placement: PlacementInProcess
) -> None:
    """After the last conflict the row must not keep holdings known to be wrong.

    Otherwise the next transition starts from them: a transition that does
    not touch the server then "succeeds" and records a server allocation that
    Placement does not have.
    """
    rig = Rig(make_cloud("max_flavor"), placement, conflict_retries=0)
    intruded = {rig.h1: rs.add(OLD, {"VCPU": 1})}
    rig.someone_else_writes_server(intruded)
    with pytest.raises(exception.PlacementConflict):
        rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    assert rig.migration.holdings in (
        None,
        {"server": intruded, "migration": {}, "generations": _gens(2, None)},
    )

    healthy = TransitionExecutor(rig.client, rig.cloud.db, conflict_retries=3)
    migration = healthy.apply(
        rig.migration, "mark", Holdings(server={rig.h1: OLD}, migration={rig.h2: OLD})
    )
    held = rig.held()
    assert held == Holdings(server={rig.h1: OLD}, migration={rig.h2: OLD})
    assert Holdings.from_dict(migration.holdings) == held


def test_conflict_retries_give_up_after_the_configured_count(
    make_cloud: Callable[..., Cloud], placement: PlacementInProcess
) -> None:
    rig = Rig(make_cloud("max_flavor"), placement, conflict_retries=2)
    writes = []

    def intrude_each_time(current: Holdings) -> Holdings:
        # Someone writes the server after every read, so every write conflicts.
        writes.append(1)
        rig.someone_else_writes_server({rig.h1: rs.add(OLD, {"VCPU": len(writes)})})
        return Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})

    with pytest.raises(exception.PlacementConflict):
        rig.apply("claim", intrude_each_time)
    s, m = rig.server.uuid, rig.migration_uuid
    reread = [("GET", f"/allocations/{s}"), ("GET", f"/allocations/{m}")]
    post = [("POST", "/allocations")]
    assert rig.spy.calls == post + reread + post + reread + post  # 1 try + 2 retries
    assert rig.journal() == [
        (1, "claim", "abandoned"),
        (2, "claim", "abandoned"),
        (3, "claim", "abandoned"),
    ]
    assert rig.held() == Holdings(server={rig.h1: rs.add(OLD, {"VCPU": 3})})
    assert rig.usages() == (rs.add(OLD, {"VCPU": 3}), {})


# -- capacity refusal -------------------------------------------------------------------


def test_capacity_refusal_raises_journals_abandoned_and_changes_nothing(rig: Rig) -> None:
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    usages, gens, held = rig.usages(), rig.generations(), rig.held()
    row = rig.migration.holdings
    rig.spy.calls.clear()

    too_big = {rig.h2: {"VCPU": 5, "MEMORY_MB": 1024, "DISK_GB": 10}}
    with pytest.raises(exception.ClaimRefused):
        rig.apply("claim", Holdings(server=too_big, migration={}))

    assert rig.spy.calls == [("POST", "/allocations")]  # not retried
    assert rig.journal() == [(1, "prepare", "applied"), (2, "claim", "abandoned")]
    refused = rig.cloud.db.journal_list(rig.migration_uuid)[1]
    assert "Unable to allocate inventory" in refused.detail
    assert (rig.usages(), rig.generations(), rig.held()) == (usages, gens, held)
    # Nothing moved, so the tracked holdings are still right: no read next time.
    assert rig.migration.holdings == row
    rig.spy.calls.clear()
    rig.apply("claim", Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD}))
    assert rig.spy.calls == [("POST", "/allocations")]  # no read first


# -- Placement unreachable ---------------------------------------------------------------


def test_unreachable_placement_leaves_intended_and_forgets_holdings(
    rig: Rig, placement: PlacementInProcess
) -> None:
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    usages, gens = rig.usages(), rig.generations()
    dead = TransitionExecutor(
        placement.client(endpoint=DEAD_ENDPOINT, connect_retries=0), rig.cloud.db
    )
    target = Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})

    with pytest.raises(exception.PlacementUnavailable):
        dead.apply(rig.migration, "claim", target)

    assert rig.journal() == [(1, "prepare", "applied"), (2, "claim", "intended")]
    pending = rig.cloud.db.journal_pending()
    assert [(e.migration_uuid, e.seq, e.state) for e in pending] == [
        (rig.migration_uuid, 2, "intended")
    ]
    assert pending[0].target == target.to_dict()
    assert rig.migration.holdings is None
    assert (rig.usages(), rig.generations()) == (usages, gens)

    # The next apply through a healthy client reads first, fences the
    # consumer that holds something (the lost write may still land), then writes.
    rig.spy.calls.clear()
    migration = rig.apply("claim", target)
    s, m = rig.server.uuid, rig.migration_uuid
    assert rig.spy.calls == [
        ("GET", f"/allocations/{s}"),
        ("GET", f"/allocations/{m}"),
        ("PUT", f"/allocations/{m}"),
        ("POST", "/allocations"),
    ]
    assert rig.held() == target
    assert rig.usages() == (OLD, NEW)
    assert rig.journal() == [
        (1, "prepare", "applied"),
        (2, "claim", "abandoned"),
        (3, "claim", "applied"),
    ]
    assert migration.holdings == {**target.to_dict(), "generations": _gens(1, 3)}


def test_a_write_settled_abandoned_cannot_land_late(rig: Rig) -> None:
    """A write whose answer was lost may still sit in Placement's queue. Once
    its entry is settled ``abandoned`` (by the next read, or the sweep), that
    write, arriving late with the generations it was built on, is refused."""
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    before = rig.migration
    known = rig.executor.known(before)
    target = Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})
    late = rig.executor._writes(before, known, target)
    rig.cloud.db.journal_intend(
        before.uuid, phase="claim", before=known.to_dict(), target=target.to_dict()
    )

    actual, verdicts = rig.executor.settle(before, rig.executor.read(before))

    assert list(verdicts.values()) == ["abandoned"]
    assert actual.holdings == known.holdings
    assert rig.journal()[-1] == (2, "claim", "abandoned")
    with pytest.raises(exception.ConsumerGenerationConflict):
        rig.client.post_allocations(late) if len(late) > 1 else rig.client.put_allocations(
            *next(iter(late.items()))
        )
    assert rig.held() == known.holdings
    assert rig.usages() == (OLD, {})


def test_an_entry_a_later_write_superseded_is_settled_abandoned(rig: Rig) -> None:
    """A step journals its write and dies (or its write fails) before marking
    it; a delete then releases both consumers from a fresh read. Placement
    holds nothing, which is neither the entry's target nor what was held
    before it, yet the entry is settled: the release was written after it on
    newer generations, so that write, if it ever arrives, is refused."""
    rig.apply("prepare", Holdings(migration={rig.h1: OLD}))
    before = rig.migration
    known = rig.executor.known(before)
    target = Holdings(server={rig.h2: NEW}, migration={rig.h1: OLD})
    late = rig.executor._writes(before, known, target)
    rig.cloud.db.journal_intend(
        before.uuid, phase="claim", before=known.to_dict(), target=target.to_dict()
    )
    rig.executor.release(before)
    assert rig.held() == Holdings()

    actual, verdicts = rig.executor.settle(rig.migration, rig.executor.read(rig.migration))

    assert list(verdicts.values()) == ["abandoned"]
    assert actual.holdings == Holdings()
    assert rig.journal() == [
        (1, "prepare", "applied"),
        (2, "claim", "abandoned"),
        (3, "release", "applied"),
    ]
    assert rig.cloud.db.journal_pending() == []
    with pytest.raises(exception.ConsumerGenerationConflict):
        rig.client.post_allocations(late) if len(late) > 1 else rig.client.put_allocations(
            *next(iter(late.items()))
        )
    assert rig.held() == Holdings()
    assert rig.usages() == ({}, {})
