"""The scheduler's cache of compute node rows: fresh rows served, old ones read again."""

import datetime

from resize_sched.db.host_api import NodeRow
from resize_sched.scheduler.node_cache import NodeCache


def _row(
    uuid: str,
    *,
    forced_down: bool = False,
    inventory: dict | None = None,
    beat_ago: float = 1.0,
) -> NodeRow:
    seen = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=beat_ago)
    return NodeRow(
        uuid, f"host-{uuid}", f"host-{uuid}", "fake", inventory or {}, 0, False, forced_down, seen
    )


class _Db:
    """Counts the reads; answers from its own table of rows."""

    def __init__(self, *uuids: str) -> None:
        self.table = {uuid: _row(uuid) for uuid in uuids}
        self.calls: list[tuple[list[str], bool]] = []

    def host_state_nodes(self, uuids, *, inventory: bool = True) -> dict[str, NodeRow]:
        wanted = list(uuids)
        self.calls.append((wanted, inventory))
        return {u: self.table[u] for u in wanted if u in self.table}


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rows_are_served_until_they_are_older_than_max_age() -> None:
    db, clock = _Db("a", "b", "c"), _Clock()
    cache = NodeCache(db, 5.0, clock=clock)

    assert set(cache.nodes(["a", "b"])) == {"a", "b"}
    assert db.calls == [(["a", "b"], False)]

    # Within max_age: only the row never read is read.
    clock.now += 4.0
    db.table["a"] = _row("a", forced_down=True)
    found = cache.nodes(["a", "b", "c"])
    assert db.calls[-1] == (["c"], False)
    assert found["a"].forced_down is False  # the row as read 4 s ago

    # Past max_age: read again, and the change is seen.
    clock.now += 1.5
    found = cache.nodes(["a", "c"])
    assert db.calls[-1] == (["a"], False)
    assert found["a"].forced_down is True
    assert found["c"] == db.table["c"]


def test_a_row_that_keeps_its_host_out_is_read_every_time() -> None:
    # Served from the cache, a row may only let a host in late: one that
    # says "forced down" is read again, so the host is seen back at once.
    db, clock = _Db("a"), _Clock()
    db.table["a"] = _row("a", forced_down=True)
    cache = NodeCache(db, 5.0, clock=clock)
    assert cache.nodes(["a"])["a"].forced_down
    db.table["a"] = _row("a")
    assert not cache.nodes(["a"])["a"].forced_down
    assert len(db.calls) == 2
    cache.nodes(["a"])
    assert len(db.calls) == 2


def test_a_heartbeat_that_would_age_past_down_time_in_the_cache_is_read_again() -> None:
    db, clock = _Db("fresh", "old"), _Clock()
    db.table["old"] = _row("old", beat_ago=56.0)  # 60 s down time, 5 s in the cache
    cache = NodeCache(db, 5.0, down_time=lambda: 60.0, clock=clock)
    cache.nodes(["fresh", "old"])
    cache.nodes(["fresh", "old"])
    assert db.calls == [(["fresh", "old"], False), (["old"], False)]


def test_a_provider_without_a_node_is_looked_for_every_time() -> None:
    db, clock = _Db("a"), _Clock()
    cache = NodeCache(db, 5.0, clock=clock)
    assert cache.nodes(["a", "new"]) == {"a": db.table["a"]}
    db.table["new"] = _row("new")
    assert set(cache.nodes(["a", "new"])) == {"a", "new"}
    assert db.calls[-1] == (["new"], False)


def test_a_row_read_without_its_inventory_is_read_again_when_one_is_needed() -> None:
    db, clock = _Db("a"), _Clock()
    db.table["a"] = _row("a", inventory={"VCPU": {"total": 8}})
    cache = NodeCache(db, 5.0, clock=clock)
    cache.nodes(["a"])
    cache.nodes(["a"], inventory=True)
    assert db.calls == [(["a"], False), (["a"], True)]
    # Now cached with it: both kinds of request are served.
    cache.nodes(["a"], inventory=True)
    cache.nodes(["a"])
    assert len(db.calls) == 2


def test_zero_reads_every_row_for_every_request() -> None:
    db, clock = _Db("a", "b"), _Clock()
    cache = NodeCache(db, 0, clock=clock)
    cache.nodes(["a", "b"])
    cache.nodes(["a", "b"])
    assert db.calls == [(["a", "b"], False), (["a", "b"], False)]
    assert len(cache) == 0


def test_old_rows_are_swept_so_the_cache_does_not_grow_without_bound() -> None:
    db, clock = _Db(*(str(i) for i in range(10))), _Clock()
    cache = NodeCache(db, 5.0, clock=clock)
    cache.nodes([str(i) for i in range(8)])
    assert len(cache) == 8
    clock.now += 6.0
    cache.nodes(["8", "9"])  # the only hosts asked about since
    assert len(cache) == 2


def test_forget_drops_one_row() -> None:
    db, clock = _Db("a", "b"), _Clock()
    cache = NodeCache(db, 5.0, clock=clock)
    cache.nodes(["a", "b"])
    cache.forget("a")
    cache.nodes(["a", "b"])
    assert db.calls[-1] == (["a"], False)
    assert len(cache) == 2
