"""Guards for the reaper's pass window: each consumer is read by exactly one
pass, and one a pass could not give back is read again by the next.

The next pass reads what was deleted or closed strictly after this pass's
``until``; so a consumer closed exactly at ``until`` belongs to this pass,
and ``until`` must fall before the earliest consumer left. The database,
Placement and the executor are stand-ins; ``reaper.reap`` runs whole.
"""

import datetime
from types import SimpleNamespace
from typing import Any

from resize_sched import exception
from resize_sched.conductor import reaper

NOW = datetime.datetime(2026, 1, 2, 12, 0, tzinfo=datetime.UTC)
GRACE = 600.0
END = NOW - datetime.timedelta(seconds=GRACE)


class _Executor:
    def __init__(self, refuse: set[str]) -> None:
        self.refuse = refuse
        self.given_back: list[str] = []

    def apply_server(self, server: Any, phase: str, target: Any) -> bool:
        if server.uuid in self.refuse:
            raise exception.PlacementConflict(
                method="PUT", url=f"/allocations/{server.uuid}", placement_code="x", detail="busy"
            )
        self.given_back.append(server.uuid)
        return True


def _manager(servers: list[Any], refuse: set[str] = frozenset()) -> Any:
    conf = SimpleNamespace(
        conductor=SimpleNamespace(reap_after=GRACE),
        placement=SimpleNamespace(deployment_name="test"),
    )
    db = SimpleNamespace(reap_recent=lambda since: (list(servers), []))
    executor = _Executor(set(refuse))
    deps = SimpleNamespace(conf=conf, client=None, executor=executor)
    return SimpleNamespace(deps=deps, db=db)


def _deleted(uuid: str, at: datetime.datetime) -> Any:
    return SimpleNamespace(uuid=uuid, deleted_at=at)


def test_a_server_deleted_exactly_at_the_end_of_the_window_is_read_by_this_pass() -> None:
    # The next pass starts strictly after END: left now, it would never be read.
    manager = _manager([_deleted("s-edge", END), _deleted("s-new", END + _us(1))])
    report = reaper.reap(manager, GRACE, since=END - datetime.timedelta(hours=1), now=NOW)
    assert manager.deps.executor.given_back == ["s-edge"]
    assert report.reaped == {"s-edge": "deleted server"}
    assert report.left == {"s-new": "within the grace period"}
    assert report.until == END


def test_the_next_pass_starts_before_the_earliest_consumer_left() -> None:
    early = END - datetime.timedelta(minutes=30)
    late = END - datetime.timedelta(minutes=5)
    servers = [_deleted("s-late", late), _deleted("s-ok", END), _deleted("s-early", early)]
    manager = _manager(servers, refuse={"s-early", "s-late"})
    report = reaper.reap(manager, GRACE, since=END - datetime.timedelta(hours=1), now=NOW)
    assert manager.deps.executor.given_back == ["s-ok"]
    assert set(report.left) == {"s-early", "s-late"}
    assert report.until == early - _us(1)


def _us(n: int) -> datetime.timedelta:
    return datetime.timedelta(microseconds=n)
