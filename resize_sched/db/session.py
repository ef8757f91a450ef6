"""Sessions and small helpers shared by the data API modules.

Every data API call is one explicit transaction: :meth:`SessionSource._reader`
for reads, :meth:`SessionSource._writer` for anything that writes (on SQLite
it takes the write lock at ``BEGIN``; see :mod:`resize_sched.db.engines`).
Sessions never outlive the call, and ``expire_on_commit`` is off, so the ORM
objects returned are detached, fully loaded snapshots: change state through
the API, never by setting attributes on them.

A write transaction the database aborts to break a deadlock (on Galera: a
certification failure at COMMIT; on PostgreSQL: a serialization failure), or
whose connection is lost, is run again whole: every data API method that
writes is decorated with :func:`retry_on_deadlock`, oslo.db's
``wrap_db_retry(retry_on_deadlock=True, retry_on_disconnect=True)`` with
oslo.db's exception filters on the engine (:mod:`resize_sched.db.engines`).

A run whose connection was lost while it committed may have been committed
all the same. The next run then finds its own work done: a compare-and-swap
(:func:`update_where`, :func:`cas_update`) that finds the row already holding
every value it would write counts as done instead of "not in the expected
state", and the inserts that could be doubled look for their own row first
(:func:`commit_may_have_landed`).
"""

import contextlib
import dataclasses
import datetime
import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_log import log as logging
from sqlalchemy.orm import InstrumentedAttribute, Session, sessionmaker

from resize_sched import exception
from resize_sched.db import engines, models

LOG = logging.getLogger(__name__)

# Columns no update may set.
_IMMUTABLE = frozenset({"id", "uuid", "created_at", "updated_at"})

# -- retry on deadlock or lost connection ------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a failed write transaction runs again
    (the ``[database] db_*retr*`` options).

    :param max_retries: runs after the first one, at most.
    :param retry_interval: seconds before the first new run.
    :param inc_retry_interval: double the wait before each further run
        (drawn at random below that ceiling after a deadlock).
    :param max_retry_interval: the longest wait, in seconds.
    """

    max_retries: int = 10
    retry_interval: float = 0.1
    inc_retry_interval: bool = True
    max_retry_interval: float = 2.0


#: What a write raises when a row it adds or changes breaks a unique key or
#: a foreign key: oslo.db's exceptions (its filters are on our engines;
#: :mod:`resize_sched.db.engines`), and SQLAlchemy's own for an engine
#: without them.
INTEGRITY_ERRORS: tuple[type[Exception], ...] = (
    db_exc.DBDuplicateEntry,
    db_exc.DBReferenceError,
    db_exc.DBConstraintError,
    sa.exc.IntegrityError,
)

#: The policy of a :class:`SessionSource` that was given none.
DEFAULT_RETRY = RetryPolicy()

_P = ParamSpec("_P")
_R = TypeVar("_R")

# NOTE: per thread: whether a decorated method is running (one called from
# another, server_update from server_delete..., runs once: the outer one
# retries the whole), which run of it this is, and whether an earlier run's
# COMMIT may have landed though its answer was lost.
_retrying = threading.local()


def is_deadlock(exc: BaseException) -> bool:
    """Whether ``exc`` is the database aborting a transaction to break a
    deadlock, a lock wait time-out, a serialization conflict or (Galera) a
    certification failure, so that running it again may succeed.

    :param exc: an exception a data API call raised.
    :returns: True for oslo.db's :class:`~oslo_db.exception.DBDeadlock`
        (MySQL/MariaDB errors 1213 and 1205, PostgreSQL's "deadlock
        detected") and PostgreSQL SQLSTATE 40001 (serialization failure),
        which oslo.db's filters leave as SQLAlchemy's error.
    """
    if isinstance(exc, db_exc.DBDeadlock):
        return True
    if isinstance(exc, db_exc.DBError):
        exc = exc.inner_exception  # type: ignore[assignment]
    if not isinstance(exc, sa.exc.DBAPIError) or exc.connection_invalidated:
        return False
    # NOTE: psycopg 3 names it sqlstate, psycopg2 pgcode.
    sqlstate = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return sqlstate in _PG_RETRY


#: PostgreSQL SQLSTATEs worth a new run beyond oslo.db's DBDeadlock:
#: 40001 serialization_failure, 40P01 deadlock_detected.
_PG_RETRY = frozenset({"40001", "40P01"})


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection went away or cannot be had: the
    server died or restarted (MySQL 2006, 2013), cannot be reached (2003),
    or a Galera node is not ready yet (1047 "WSREP has not yet prepared node
    for application use"); PostgreSQL's closed or terminated connections.
    oslo.db's exception filters make all of these
    :class:`~oslo_db.exception.DBConnectionError`."""
    return isinstance(exc, db_exc.DBConnectionError)


def commit_may_have_landed() -> bool:
    """Whether, in the data API call running on this thread, an earlier run
    lost its connection while committing: the database may have committed
    it. A compare-and-swap or an insert that finds its own work already done
    then takes it as done (:func:`already_done`)."""
    return bool(getattr(_retrying, "landed", False))


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "inner_exception", None) or exc
    orig = getattr(inner, "orig", None) or inner
    return (str(orig).splitlines() or [type(orig).__name__])[0]


@functools.cache
def _retrier(run: Callable[..., Any], policy: RetryPolicy) -> Callable[..., Any]:
    """oslo.db's retry loop around ``run`` (built once per method and policy)."""
    return oslo_db_api.wrap_db_retry(
        max_retries=policy.max_retries,
        retry_interval=policy.retry_interval,
        inc_retry_interval=policy.inc_retry_interval,
        max_retry_interval=policy.max_retry_interval,
        retry_on_deadlock=True,
        retry_on_disconnect=True,
        exception_checker=is_deadlock,
    )(run)


def retry_on_deadlock(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a data API write again, whole, when its transaction failed in a way
    a new run may not: a deadlock, lock wait time-out or Galera
    certification failure (:func:`is_deadlock`), or a connection lost or
    refused (:func:`is_connection_lost`).

    The loop is oslo.db's :func:`~oslo_db.api.wrap_db_retry`, with the
    policy of the object the method belongs to (its ``retry_policy``, from
    the ``[database]`` options; :data:`DEFAULT_RETRY` otherwise). The
    transaction was rolled back (or, for a connection lost while
    committing, may have landed: :func:`commit_may_have_landed`), so the
    method must open its own transactions (:meth:`SessionSource._writer`)
    and do nothing outside them that cannot be done twice (no RPC, no
    Placement call). A decorated method called from another one runs once:
    the outermost one retries the whole. Each new run is logged at INFO
    ("database deadlock" or "database connection lost", "retrying"), the
    last failure at WARNING, and the error is raised again.
    """
    name = method.__qualname__

    def run(*args: Any, **kwargs: Any) -> Any:
        _retrying.attempt += 1
        engines.commit_interrupted()  # what an earlier call left is not ours
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            if is_connection_lost(exc):
                what = "database connection lost"
                if engines.commit_interrupted():
                    _retrying.landed = True
            elif is_deadlock(exc):
                what = "database deadlock"
            else:
                raise
            attempts = _retrying.policy.max_retries + 1
            if _retrying.attempt < attempts:
                LOG.info(
                    "%s: %s (attempt %d of %d), retrying the transaction: %s",
                    name,
                    what,
                    _retrying.attempt,
                    attempts,
                    _reason(exc),
                )
            else:
                LOG.warning(
                    "%s: %s, giving up after %d attempts: %s",
                    name,
                    what,
                    _retrying.attempt,
                    _reason(exc),
                )
            raise

    @functools.wraps(method)
    def retried(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if getattr(_retrying, "active", False):
            return method(*args, **kwargs)
        policy = getattr(args[0], "retry_policy", DEFAULT_RETRY) if args else DEFAULT_RETRY
        if not isinstance(policy, RetryPolicy):
            policy = DEFAULT_RETRY
        _retrying.active, _retrying.attempt, _retrying.landed = True, 0, False
        _retrying.found_done = False
        _retrying.policy = policy
        try:
            result: _R = _retrier(run, policy)(*args, **kwargs)
            return result
        finally:
            _retrying.active, _retrying.landed = False, False

    return retried


def stamp_after(previous: datetime.datetime | None) -> datetime.datetime:
    """Now, or a microsecond after ``previous`` if that is not earlier: a new
    ``updated_at`` that surely changes the row.

    A transaction that must conflict with every other writer of a row (on
    Galera, certification only compares the rows each transaction changed)
    writes this to it; an UPDATE that leaves a row as it was changes nothing
    and conflicts with nothing.
    """
    now = models.utcnow()
    if previous is not None and now <= previous:
        return previous + datetime.timedelta(microseconds=1)
    return now


class SessionSource:
    """Owns the engine and the two session factories."""

    engine: sa.Engine
    #: how :func:`retry_on_deadlock` runs this object's writes again
    retry_policy: RetryPolicy = DEFAULT_RETRY

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


@functools.cache
def _columns(model: type) -> frozenset[str]:
    """The names of ``model``'s columns (read once per model)."""
    return frozenset(sa.inspect(model).columns.keys())


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
    if not values:
        return
    columns = _columns(model)
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
    if not result.rowcount and already_done(row, values):
        return 1, row
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
    if not result.rowcount and already_done(row, values):
        return 1, row
    return result.rowcount, row


def already_done(row: Any, values: Mapping[str, Any]) -> bool:
    """Whether a compare-and-swap that changed nothing was in fact done by an
    earlier run of this very call, whose COMMIT landed though its
    connection was lost (:func:`commit_may_have_landed`): the row holds every
    value the swap writes.

    Only ever true in such a run. Values that are SQL expressions (computed
    by the database) cannot be compared and are left out; a swap that
    writes nothing else is never taken as done.
    """
    if row is None or not commit_may_have_landed():
        return False
    compared = {k: v for k, v in values.items() if not isinstance(v, sa.ClauseElement)}
    if not compared or not all(getattr(row, k) == v for k, v in compared.items()):
        return False
    LOG.info(
        "%r already holds what this write sets: its earlier run committed though the "
        "connection was lost; taken as done",
        row,
    )
    _retrying.found_done = True
    return True


def found_done() -> bool:
    """Whether the last compare-and-swap of this thread was taken as done by
    :func:`already_done` (so that work done with it in the same commit, by the
    earlier run, is not done again); asking clears it."""
    done = bool(getattr(_retrying, "found_done", False))
    _retrying.found_done = False
    return done


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
