"""Which database errors :func:`retry_on_deadlock` runs a write again for, how
often, and what it logs.

The errors are the drivers' own, put through oslo.db's exception filters (the
ones :func:`resize_sched.db.engines.create_engine` registers) as SQLAlchemy
hands them over; the functional tests raise them from a real server.
"""

import logging
import types

import psycopg.errors
import pymysql.err
import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters

from resize_sched.db import engines, retry, session


def _filtered(
    orig: BaseException,
    cls: type = sa.exc.OperationalError,
    dialect: str = "mysql",
    disconnect: bool = False,
) -> BaseException:
    """What our engine raises for the driver's ``orig``: oslo.db's filter's
    verdict, or SQLAlchemy's own error when no filter claims it."""
    wrapped = cls("UPDATE servers ...", {}, orig)
    context = types.SimpleNamespace(
        dialect=types.SimpleNamespace(name=dialect),
        sqlalchemy_exception=wrapped,
        original_exception=orig,
        is_disconnect=disconnect,
        connection=None,
    )
    try:
        translated = exc_filters.handler(context)
    except BaseException as exc:  # a filter that re-raises what it was given
        return exc
    return translated if translated is not None else wrapped


_DEADLOCK = "Deadlock found when trying to get lock; try restarting transaction"


@pytest.mark.parametrize(
    ("orig", "cls", "deadlock", "lost"),
    [
        (pymysql.err.OperationalError(1213, _DEADLOCK), sa.exc.OperationalError, True, False),
        (
            pymysql.err.OperationalError(1205, "Lock wait timeout exceeded"),
            sa.exc.OperationalError,
            True,
            False,
        ),
        (
            pymysql.err.OperationalError(2006, "MySQL server has gone away"),
            sa.exc.OperationalError,
            False,
            True,
        ),
        (
            pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query"),
            sa.exc.OperationalError,
            False,
            True,
        ),
        (
            pymysql.err.OperationalError(2003, "Can't connect to MySQL server on 'db'"),
            sa.exc.OperationalError,
            False,
            True,
        ),
        # NOTE: a Galera node still joining the cluster.
        (
            pymysql.err.OperationalError(
                1047, "WSREP has not yet prepared node for application use"
            ),
            sa.exc.OperationalError,
            False,
            True,
        ),
        (
            pymysql.err.InternalError(1927, "Connection was killed"),
            sa.exc.InternalError,
            False,
            True,
        ),
        (
            pymysql.err.IntegrityError(1062, "Duplicate entry 'x' for key 'PRIMARY'"),
            sa.exc.IntegrityError,
            False,
            False,
        ),
    ],
)
def test_which_mysql_errors_are_retried(
    orig: BaseException, cls: type, deadlock: bool, lost: bool
) -> None:
    raised = _filtered(orig, cls)
    assert session.is_deadlock(raised) is deadlock
    assert session.is_connection_lost(raised) is lost


def test_a_duplicate_is_oslo_dbs_and_an_integrity_error() -> None:
    raised = _filtered(
        pymysql.err.IntegrityError(1062, "Duplicate entry 'x-1' for key 'uq_x'"),
        sa.exc.IntegrityError,
    )
    assert isinstance(raised, db_exc.DBDuplicateEntry)
    assert isinstance(raised, session.INTEGRITY_ERRORS)


@pytest.mark.parametrize(
    ("orig", "expected"),
    [
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (psycopg.errors.SerializationFailure("could not serialize access"), True),
        (psycopg.errors.UniqueViolation("duplicate key"), False),
    ],
)
def test_which_postgresql_errors_are_deadlocks(orig: BaseException, expected: bool) -> None:
    cls = sa.exc.IntegrityError if expected is False else sa.exc.OperationalError
    assert session.is_deadlock(_filtered(orig, cls, dialect="postgresql")) is expected


def test_other_errors_are_neither() -> None:
    assert not session.is_deadlock(RuntimeError("1213"))
    assert not session.is_connection_lost(RuntimeError("2013"))
    assert not session.is_deadlock(db_exc.DBError(RuntimeError("40001")))


class _Writes:
    """Fails its write with ``errors`` in turn, then succeeds."""

    retry_policy = session.RetryPolicy(max_retries=4, retry_interval=0, max_retry_interval=0)

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


_GALERA = _filtered(pymysql.err.OperationalError(1213, _DEADLOCK))
_LOST = _filtered(pymysql.err.OperationalError(2013, "Lost connection to MySQL server"))
_ATTEMPTS = _Writes.retry_policy.max_retries + 1


def _lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == session.__name__]


def test_a_deadlocked_write_is_run_again(caplog: pytest.LogCaptureFixture) -> None:
    writes = _Writes(_GALERA, _LOST)
    with caplog.at_level(logging.INFO, logger=session.__name__):
        assert writes.write("done") == "done"
    assert writes.calls == 3
    lines = _lines(caplog)
    assert [r.levelno for r in lines] == [logging.INFO, logging.INFO]
    assert all(r.exc_info is None for r in lines)
    first, second = (r.getMessage() for r in lines)
    assert "_Writes.write: database deadlock (attempt 1 of 5), retrying the transaction" in first
    assert "1213" in first
    assert "database connection lost (attempt 2 of 5), retrying the transaction" in second


def test_a_write_that_keeps_deadlocking_fails_after_the_last_attempt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writes = _Writes(*[_GALERA] * (_ATTEMPTS + 1))
    with caplog.at_level(logging.INFO, logger=session.__name__):
        with pytest.raises(db_exc.DBDeadlock):
            writes.write("never")
    assert writes.calls == _ATTEMPTS
    lines = _lines(caplog)
    assert len(lines) == _ATTEMPTS
    assert [r.levelno for r in lines[:-1]] == [logging.INFO] * (_ATTEMPTS - 1)
    assert lines[-1].levelno == logging.WARNING
    assert "giving up after 5 attempts" in lines[-1].getMessage()


def test_other_errors_are_not_retried() -> None:
    duplicate = _filtered(
        pymysql.err.IntegrityError(1062, "Duplicate entry 'a' for key 'uq_a'"),
        sa.exc.IntegrityError,
    )
    writes = _Writes(duplicate)
    with pytest.raises(db_exc.DBDuplicateEntry):
        writes.write("x")
    assert writes.calls == 1


def test_a_nested_write_is_retried_by_the_outer_one_only() -> None:
    writes = _Writes(*[_GALERA] * (_ATTEMPTS - 1))
    assert writes.outer() == "inner"
    assert writes.calls == _ATTEMPTS


def test_the_policy_comes_from_the_options() -> None:
    from oslo_config import cfg

    from resize_sched import conf as rs_conf
    from resize_sched.db.api import Database

    conf = cfg.ConfigOpts()
    rs_conf.register_opts(conf)
    conf([], project="resize_sched")
    conf.set_override("connection", "sqlite://", group="database")
    conf.set_override("db_max_retries", 3, group="database")
    conf.set_override("db_retry_interval", 0.25, group="database")
    conf.set_override("db_max_retry_interval", 5.0, group="database")
    conf.set_override("db_inc_retry_interval", False, group="database")
    db = Database.from_conf(conf)
    try:
        assert db.retry_policy == session.RetryPolicy(3, 0.25, False, 5.0)
    finally:
        db.dispose()


def test_a_commit_interrupted_is_told_once() -> None:
    engines._commits.lost = True
    assert engines.commit_interrupted()
    assert not engines.commit_interrupted()


_REFUSED = _filtered(
    pymysql.err.OperationalError(
        2003, "Can't connect to MySQL server on 'db1' ([Errno 111] Connection refused)"
    )
)


@pytest.mark.parametrize(
    ("message", "unreachable"),
    [
        ("Can't connect to MySQL server on 'db1' ([Errno 111] Connection refused)", True),
        ("Can't connect to MySQL server on 'db1' ([Errno 113] No route to host)", True),
        ("Can't connect to MySQL server on 'db1' ([Errno -2] Name or service not known)", True),
        ("Can't connect to MySQL server on 'db1' (timed out)", False),
        ("Lost connection to MySQL server during query", False),
        ("WSREP has not yet prepared node for application use", False),
    ],
)
def test_which_connection_errors_say_the_database_is_not_there(
    message: str, unreachable: bool
) -> None:
    code = 2003 if message.startswith("Can't") else 2013 if "Lost" in message else 1047
    raised = _filtered(pymysql.err.OperationalError(code, message))
    assert session.is_connection_lost(raised)
    assert retry.is_unreachable(raised) is unreachable


def test_an_unreachable_database_is_tried_once_more_then_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writes = _Writes(*[_REFUSED] * _ATTEMPTS)
    with caplog.at_level(logging.INFO, logger=session.__name__):
        with pytest.raises(retry.DatabaseUnreachable) as raised:
            writes.write("never")
    assert writes.calls == retry.UNREACHABLE_ATTEMPTS == 2
    assert raised.value.attempts == 2
    assert "Connection refused" in str(raised.value)
    assert "[database] connection" in str(raised.value)
    assert [r.levelno for r in _lines(caplog)] == [logging.INFO, logging.WARNING]


class _SlowWrites(_Writes):
    """Waits longer between runs than its connection errors may take."""

    retry_policy = session.RetryPolicy(
        max_retries=4, retry_interval=0.5, max_retry_interval=0.5, connection_retry_timeout=0.2
    )


def test_connection_errors_stop_when_their_time_is_spent(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(retry.time, "sleep", slept.append)
    writes = _SlowWrites(_LOST, _LOST)
    with caplog.at_level(logging.INFO, logger=session.__name__):
        with pytest.raises(db_exc.DBConnectionError):
            writes.write("never")
    assert writes.calls == 1 and slept == []
    assert "db_connection_retry_timeout" in _lines(caplog)[-1].getMessage()
    # NOTE: deadlocks are not connection errors: they keep their retries.
    writes = _SlowWrites(_GALERA, _GALERA)
    assert writes.write("done") == "done"
    assert writes.calls == 3 and len(slept) == 2
