"""The conductors' lease: a compare-and-swap on every backend.

One holder at a time, renewed by its holder, taken over once expired, and of
conductors racing for it (for a row not yet created, or one just expired)
exactly one wins.
"""

import threading

from resize_sched.db import models
from resize_sched.db.api import Database

SWEEP = models.LEASE_SWEEP


def _race(db: Database, takers: int, duration: float) -> list[str]:
    """``takers`` conductors take the lease at once; who got it."""
    barrier = threading.Barrier(takers)
    won: list[str] = []
    errors: list[BaseException] = []

    def take(holder: str) -> None:
        try:
            barrier.wait(30)
            if db.lease_take(SWEEP, holder, duration) is not None:
                won.append(holder)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(f"cond{i}",)) for i in range(takers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    return won


def test_one_holder_renews_others_wait(db: Database) -> None:
    first = db.lease_take(SWEEP, "cond1", 60)
    assert first is not None and first.holder == "cond1"
    assert db.lease_take(SWEEP, "cond2", 60) is None
    renewed = db.lease_take(SWEEP, "cond1", 60)
    assert renewed is not None and renewed.expires_at > first.expires_at
    assert db.lease_get(SWEEP).holder == "cond1"


def test_an_expired_lease_is_taken_over(db: Database) -> None:
    # Taken for no time at all: expired as soon as it is written.
    assert db.lease_take(SWEEP, "cond1", 0) is not None
    taken = db.lease_take(SWEEP, "cond2", 60)
    assert taken is not None and taken.holder == "cond2"
    # The old holder comes back: it is no longer its.
    assert db.lease_take(SWEEP, "cond1", 60) is None


def test_a_released_lease_is_taken_at_once_and_only_its_holder_releases(db: Database) -> None:
    db.lease_take(SWEEP, "cond1", 60)
    assert db.lease_release(SWEEP, "cond2") is False
    assert db.lease_take(SWEEP, "cond2", 60) is None
    assert db.lease_release(SWEEP, "cond1") is True
    assert db.lease_take(SWEEP, "cond2", 60).holder == "cond2"


def test_only_the_holder_records_progress(db: Database) -> None:
    db.lease_take(SWEEP, "cond1", 60)
    now = models.utcnow()
    assert db.lease_record(SWEEP, "cond2", reaped_until=now) is False
    assert db.lease_get(SWEEP).reaped_until is None
    assert db.lease_record(SWEEP, "cond1", reaped_until=now, scanned_at=now) is True
    lease = db.lease_get(SWEEP)
    assert (lease.reaped_until, lease.scanned_at) == (now, now)
    # A new holder goes on from what the last one recorded.
    db.lease_release(SWEEP, "cond1")
    assert db.lease_take(SWEEP, "cond2", 60).reaped_until == now


def test_of_conductors_racing_for_a_new_lease_one_wins(db: Database) -> None:
    won = _race(db, 8, 60)
    assert len(won) == 1
    assert db.lease_get(SWEEP).holder == won[0]


def test_of_conductors_racing_for_an_expired_lease_one_wins(db: Database) -> None:
    db.lease_take(SWEEP, "dead", 0)
    for _ in range(3):
        won = _race(db, 8, 60)
        assert len(won) == 1 and won[0] != "dead"
        assert db.lease_get(SWEEP).holder == won[0]
        # Let it expire for the next round.
        assert db.lease_take(SWEEP, won[0], 0) is not None


def test_a_holder_renews_during_a_long_pass_and_stops_once_taken_over(
    db: Database, monkeypatch
) -> None:
    from resize_sched.conductor import lease as lease_module

    clock = [1000.0]
    monkeypatch.setattr(lease_module.time, "monotonic", lambda: clock[0])
    first = lease_module.Lease(db, "cond1", 60)
    second = lease_module.Lease(db, "cond2", 60)
    assert first.hold() and not second.hold()
    expires = db.lease_get(SWEEP).expires_at
    # Within half its duration: held, no statement.
    clock[0] += 29
    assert first.held() and db.lease_get(SWEEP).expires_at == expires
    # Past it: renewed.
    clock[0] += 2
    assert first.held() and db.lease_get(SWEEP).expires_at > expires
    # It expires (the holder stalled) and is taken over: the pass stops.
    db.lease_take(SWEEP, "cond1", 0)
    assert second.hold()
    clock[0] += 31
    assert not first.held() and not first.held()
    assert not first.record(reaped_until=models.utcnow())
    # A stopping holder gives it up for the next one at once.
    second.release()
    assert db.lease_get(SWEEP).holder is None
    assert first.hold()
