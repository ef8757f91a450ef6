"""Which database errors :func:`retry_on_deadlock` runs a write again for, and how often."""

import logging

import psycopg.errors
import pymysql.err
import pytest
import sqlalchemy as sa

from resize_sched.db import session


def _wrapped(orig: BaseException, cls: type = sa.exc.OperationalError) -> sa.exc.DBAPIError:
    return cls("UPDATE servers ...", {}, orig)


@pytest.mark.parametrize(
    ("orig", "expected"),
    [
        (pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock"), True),
        (pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"), True),
        (pymysql.err.OperationalError(2006, "MySQL server has gone away"), False),
        (pymysql.err.IntegrityError(1062, "Duplicate entry"), False),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (psycopg.errors.SerializationFailure("could not serialize access"), True),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
        (psycopg.errors.QueryCanceled("canceling statement"), False),
    ],
)
def test_is_deadlock(orig: BaseException, expected: bool) -> None:
    assert session.is_deadlock(_wrapped(orig)) is expected
    assert session.is_deadlock(_wrapped(orig, sa.exc.DBAPIError)) is expected


def test_is_deadlock_other_errors() -> None:
    assert not session.is_deadlock(RuntimeError("1213"))
    assert not session.is_deadlock(sa.exc.OperationalError("x", {}, None))  # type: ignore[arg-type]
    lost = sa.exc.OperationalError("x", {}, pymysql.err.OperationalError(1213, "d"))
    lost.connection_invalidated = True
    assert not session.is_deadlock(lost)


class _Writes:
    """Fails its write with ``errors`` in turn, then succeeds."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    @session.retry_on_deadlock
    def write(self, value: str) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return value

    @session.retry_on_deadlock
    def outer(self) -> str:
        return self.write("inner")


_BACKOFF = session._backoff
_DEADLOCK = _wrapped(pymysql.err.OperationalError(1213, "Deadlock found"))


@pytest.fixture(autouse=True)
def _no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "_backoff", lambda attempt: 0.0)


def test_a_deadlocked_write_is_run_again(caplog: pytest.LogCaptureFixture) -> None:
    writes = _Writes(_DEADLOCK, _DEADLOCK)
    with caplog.at_level(logging.INFO, logger=session.__name__):
        assert writes.write("done") == "done"
    assert writes.calls == 3
    lines = [r for r in caplog.records if r.name == session.__name__]
    assert [r.levelno for r in lines] == [logging.INFO, logging.INFO]
    assert all(r.exc_info is None for r in lines)
    assert "_Writes.write: database deadlock (attempt 1 of 5)" in lines[0].getMessage()


def test_a_write_that_keeps_deadlocking_fails_after_the_last_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writes = _Writes(*[_DEADLOCK] * (session.RETRY_ATTEMPTS + 1))
    with caplog.at_level(logging.INFO, logger=session.__name__):
        with pytest.raises(sa.exc.OperationalError):
            writes.write("never")
    assert writes.calls == session.RETRY_ATTEMPTS
    lines = [r for r in caplog.records if r.name == session.__name__]
    assert len(lines) == session.RETRY_ATTEMPTS
    assert lines[-1].levelno == logging.WARNING
    assert "giving up after 5 attempts" in lines[-1].getMessage()


def test_other_errors_are_not_retried() -> None:
    duplicate = _wrapped(pymysql.err.IntegrityError(1062, "Duplicate"), sa.exc.IntegrityError)
    writes = _Writes(duplicate)
    with pytest.raises(sa.exc.IntegrityError):
        writes.write("x")
    assert writes.calls == 1


def test_a_nested_write_is_retried_by_the_outer_one_only() -> None:
    writes = _Writes(*[_DEADLOCK] * (session.RETRY_ATTEMPTS - 1))
    assert writes.outer() == "inner"
    assert writes.calls == session.RETRY_ATTEMPTS


def test_backoff_grows_and_is_bounded() -> None:
    first, second, late = _BACKOFF(1), _BACKOFF(2), _BACKOFF(20)
    assert session._RETRY_DELAY / 2 <= first <= session._RETRY_DELAY
    assert session._RETRY_DELAY <= second <= 2 * session._RETRY_DELAY
    assert session._RETRY_MAX_DELAY / 2 <= late <= session._RETRY_MAX_DELAY
