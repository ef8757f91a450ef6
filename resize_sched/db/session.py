"""Sessions and small helpers shared by the data API modules.

Every data API call is one explicit transaction: :meth:`SessionSource._reader`
for reads, :meth:`SessionSource._writer` for anything that writes (on SQLite
it takes the write lock at ``BEGIN``; see :mod:`resize_sched.db.engines`).
Sessions never outlive the call, and ``expire_on_commit`` is off, so the ORM
objects returned are detached, fully loaded snapshots: change state through
the API, never by setting attributes on them.

A write transaction the database aborts to break a deadlock (or, on
PostgreSQL, a serialization failure) is run again whole: every data API
method that writes is decorated with :func:`retry_on_deadlock`, as Nova's
are with oslo.db's ``wrap_db_retry(retry_on_deadlock=True)``.
"""

import contextlib
import functools
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import InstrumentedAttribute, Session, sessionmaker

from resize_sched import exception
from resize_sched.db import engines

LOG = logging.getLogger(__name__)

# Columns no update may set.
_IMMUTABLE = frozenset({"id", "uuid", "created_at", "updated_at"})

# -- retry on deadlock -------------------------------------------------------------------

#: MySQL/MariaDB error numbers: 1213 deadlock found, 1205 lock wait timeout
#: (the statement, or with innodb_rollback_on_timeout the transaction, is
#: rolled back; the caller's rollback undoes the rest).
_MYSQL_DEADLOCK = frozenset({1205, 1213})
#: PostgreSQL SQLSTATEs: 40P01 deadlock_detected, 40001 serialization_failure.
_PG_DEADLOCK = frozenset({"40P01", "40001"})

#: How many times a write transaction runs at most, and the back-off before
#: each new attempt: ``_RETRY_DELAY * 2**(attempt - 1)`` seconds at most
#: (never more than ``_RETRY_MAX_DELAY``), drawn at random from half of that
#: up, so that the two losers of one deadlock do not meet again.
RETRY_ATTEMPTS = 5
_RETRY_DELAY = 0.05
_RETRY_MAX_DELAY = 1.0

_P = ParamSpec("_P")
_R = TypeVar("_R")

# NOTE: a decorated method called from another one (server_update from
# server_delete...) runs once: the outer one retries the whole.
_retrying = threading.local()


def is_deadlock(exc: BaseException) -> bool:
    """Whether ``exc`` is the database aborting a transaction to break a
    deadlock or a serialization conflict, so that running it again may succeed.

    :param exc: an exception a data API call raised.
    :returns: True for MySQL/MariaDB errors 1213 and 1205, PostgreSQL
        SQLSTATE 40P01 and 40001 (any driver), wrapped in SQLAlchemy's
        :class:`~sqlalchemy.exc.DBAPIError`.
    """
    if not isinstance(exc, sa.exc.DBAPIError) or exc.connection_invalidated:
        return False
    orig = exc.orig
    if orig is None:
        return False
    # NOTE: psycopg 3 names it sqlstate, psycopg2 pgcode.
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if sqlstate is not None:
        return sqlstate in _PG_DEADLOCK
    args = getattr(orig, "args", ())
    return bool(args) and isinstance(args[0], int) and args[0] in _MYSQL_DEADLOCK


def _backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1``, jittered."""
    ceiling = min(_RETRY_DELAY * 2 ** (attempt - 1), _RETRY_MAX_DELAY)
    return random.uniform(ceiling / 2, ceiling)


def retry_on_deadlock(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a data API write again, whole, when the database aborted its
    transaction to break a deadlock (:func:`is_deadlock`).

    The transaction was rolled back, so nothing of the attempt stays: the
    method must open its own transactions (:meth:`SessionSource._writer`)
    and do nothing outside them that cannot be done twice (no RPC, no
    Placement call). Up to :data:`RETRY_ATTEMPTS` runs, with a short
    jittered back-off; each retry is logged at INFO, the last failure at
    WARNING, and the error is raised again.
    """

    @functools.wraps(method)
    def retried(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if getattr(_retrying, "active", False):
            return method(*args, **kwargs)
        _retrying.active = True
        try:
            attempt = 1
            while True:
                try:
                    return method(*args, **kwargs)
                except sa.exc.DBAPIError as exc:
                    if not is_deadlock(exc):
                        raise
                    reason = (str(exc.orig).splitlines() or [type(exc.orig).__name__])[0]
                    if attempt >= RETRY_ATTEMPTS:
                        LOG.warning(
                            "%s: database deadlock, giving up after %d attempts: %s",
                            method.__qualname__,
                            attempt,
                            reason,
                        )
                        raise
                    delay = _backoff(attempt)
                    LOG.info(
                        "%s: database deadlock (attempt %d of %d), retrying in %.2fs: %s",
                        method.__qualname__,
                        attempt,
                        RETRY_ATTEMPTS,
                        delay,
                        reason,
                    )
                    time.sleep(delay)
                    attempt += 1
        finally:
            _retrying.active = False

    return retried


class SessionSource:
    """Owns the engine and the two session factories."""

    engine: sa.Engine

    def _init_sessions(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._read_sessions = sessionmaker(bind=engine, expire_on_commit=False)
        self._write_sessions = sessionmaker(
            bind=engine.execution_options(**{engines.WRITE_OPTION: True}),
            expire_on_commit=False,
        )

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Session]:
        """A session in a read transaction, closed on exit."""
        with self._read_sessions.begin() as session:
            yield session

    @contextlib.contextmanager
    def _writer(self) -> Iterator[Session]:
        """A session in a write transaction, committed on a clean exit."""
        with self._write_sessions.begin() as session:
            yield session


def check_values(
    model: type, values: Mapping[str, Any], *, what: str, compared: bool = False
) -> None:
    """Reject values for columns that do not exist or may not change.

    :param model: the ORM class.
    :param values: column name -> new value.
    :param what: the object's name, for the message.
    :param compared: the values are only compared (a compare-and-swap's
        expectations), so immutable columns are allowed.
    :raises resize_sched.exception.Invalid: an unknown or immutable column.
    """
    columns = set(sa.inspect(model).columns.keys())
    fixed = frozenset() if compared else _IMMUTABLE
    bad = sorted(k for k in values if k not in columns or k in fixed)
    if bad:
        raise exception.Invalid(reason=f"cannot update {what} field(s) {', '.join(bad)}")


def match(column: InstrumentedAttribute[Any], value: Any) -> sa.ColumnElement[bool]:
    """A WHERE clause: ``column`` equals ``value``.

    ``None`` matches NULL; a list, tuple or set matches any of its members
    (``None`` among them matching NULL).
    """
    if isinstance(value, list | tuple | set | frozenset):
        members = [v for v in value if v is not None]
        clauses: list[sa.ColumnElement[bool]] = []
        if members:
            clauses.append(column.in_(members))
        if len(members) != len(value):
            clauses.append(column.is_(None))
        return sa.or_(*clauses) if clauses else sa.false()
    if value is None:
        return column.is_(None)
    return column == value


def update_where(
    session: Session,
    model: type,
    uuid: str,
    conditions: Iterable[sa.ColumnElement[bool]],
    values: Mapping[str, Any],
    *,
    reload: bool = True,
) -> tuple[int, Any]:
    """Compare-and-swap: update the row ``uuid`` only where ``conditions`` hold.

    :param reload: read the row back after a change too; False: only when
        nothing changed (to tell why), a statement saved on the way that wins.
    :returns: (rows changed, 0 or 1; the row as it is now, or None if absent
        or not read), so a caller can tell "not found" from "not in the
        expected state".
    """
    key = model.uuid  # type: ignore[attr-defined]
    result = session.execute(
        sa.update(model)
        .where(key == uuid, *conditions)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount and not reload:
        return result.rowcount, None
    row = session.scalars(
        sa.select(model).where(key == uuid).execution_options(populate_existing=True)
    ).first()
    return result.rowcount, row


# -- compare-and-swap with statements built once ---------------------------------------
#
# Building a statement and its cache key costs far more Python than running it
# (a few hundred microseconds against tens): the steps' statements are built
# once per shape, with bound parameters, and run as Core.

#: the bound parameter :func:`cas_update` gives the row's uuid in; a ``key``
#: expression of its own binds it too
CAS_KEY = "cas_key"


def _shape(value: Any) -> str:
    """How :func:`match` compares with ``value``."""
    if isinstance(value, list | tuple | set | frozenset):
        members = [v for v in value if v is not None]
        if not members:
            return "null" if value else "false"
        return "in" if len(members) == len(value) else "in_or_null"
    return "null" if value is None else "eq"


def _matching(column: sa.Column[Any], shape: str, name: str) -> sa.ColumnElement[bool]:
    """:func:`match` of ``column`` against the bound parameter ``name``."""
    if shape == "eq":
        return column == sa.bindparam(name, type_=column.type)
    if shape == "null":
        return column.is_(None)
    if shape == "false":
        return sa.false()
    found = column.in_(sa.bindparam(name, expanding=True))
    return sa.or_(found, column.is_(None)) if shape == "in_or_null" else found


@functools.cache
def _cas_statement(
    model: type,
    key: sa.ColumnElement[bool] | None,
    columns: tuple[str, ...],
    shapes: tuple[tuple[str, str], ...],
    fixed: tuple[sa.ColumnElement[bool], ...],
) -> sa.Update:
    table: sa.Table = model.__table__  # type: ignore[attr-defined]
    where = [table.c.uuid == sa.bindparam(CAS_KEY) if key is None else key]
    where += [
        _matching(table.c[name], shape, f"cas_w{i}") for i, (name, shape) in enumerate(shapes)
    ]
    return (
        sa.update(table)
        .where(*where, *fixed)
        .values({c: sa.bindparam(f"cas_v_{c}", type_=table.c[c].type) for c in columns})
    )


def cas_update(
    session: Session,
    model: type,
    uuid: str,
    values: Mapping[str, Any],
    *,
    expected: Iterable[tuple[str, Any]] = (),
    fixed: tuple[sa.ColumnElement[bool], ...] = (),
    key: sa.ColumnElement[bool] | None = None,
    reload: bool = True,
) -> tuple[int, Any]:
    """:func:`update_where` with the conditions given as data, so that the
    statement is built once per shape.

    :param expected: (column, value) pairs that must :func:`match`.
    :param fixed: more conditions; constant expressions (the same objects
        every call), for they are part of what the statement is kept by.
    :param key: how the row is found, instead of its ``uuid`` column: a
        constant expression that binds :data:`CAS_KEY` (``uuid`` goes there).
    :returns: as :func:`update_where`.
    """
    expected = list(expected)
    shapes = tuple((name, _shape(value)) for name, value in expected)
    statement = _cas_statement(model, key, tuple(values), shapes, fixed)
    params: dict[str, Any] = {CAS_KEY: uuid}
    params.update((f"cas_v_{c}", v) for c, v in values.items())
    for i, ((_, value), (_, shape)) in enumerate(zip(expected, shapes, strict=True)):
        if shape == "eq":
            params[f"cas_w{i}"] = value
        elif shape in ("in", "in_or_null"):
            params[f"cas_w{i}"] = [v for v in value if v is not None]
    result = session.execute(statement, params)
    if result.rowcount and not reload:
        return result.rowcount, None
    where = model.uuid == uuid if key is None else key  # type: ignore[attr-defined]
    row = session.scalars(
        sa.select(model).where(where).execution_options(populate_existing=True),
        {CAS_KEY: uuid},
    ).first()
    return result.rowcount, row


def describe(obj: object, keys: Iterable[str]) -> str:
    """``status=ACTIVE, task_state=None``: the named fields of ``obj``."""
    return ", ".join(f"{k}={getattr(obj, k)}" for k in keys)


def describe_expected(expected: Mapping[str, Any]) -> str:
    """``status=ACTIVE, task_state=None``, lists shown as ``a|b``."""
    parts = []
    for key, value in expected.items():
        if isinstance(value, list | tuple | set | frozenset):
            value = "|".join(str(v) for v in value)
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def whole_number(value: Any, name: str, *, minimum: int, maximum: int = 2**31 - 1) -> int:
    """Check ``value`` is an int (not a bool) within bounds.

    :returns: the value.
    :raises ValueError: with a message naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


def text(value: Any, name: str, *, max_length: int = 255) -> str:
    """Check ``value`` is a non-blank string of at most ``max_length``.

    :returns: the value, stripped.
    :raises ValueError: with a message naming ``name``.
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    value = value.strip()
    if len(value) > max_length:
        raise ValueError(f"{name} must be at most {max_length} characters long")
    return value
