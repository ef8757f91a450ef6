"""Sessions: how a data API call opens its one transaction, and reads or writes its rows.

Every data API call is one explicit transaction: :meth:`SessionSource._reader`
for reads, :meth:`SessionSource._writer` for anything that writes (on SQLite
it takes the write lock at ``BEGIN``; see :mod:`resize_sched.db.engines`).
Sessions never outlive the call, and ``expire_on_commit`` is off, so the ORM
objects returned are detached, fully loaded snapshots: change state through
the API, never by setting attributes on them.

The two shapes the data API modules share are here once:

* reading rows: :meth:`SessionSource._list` and :meth:`SessionSource._first`,
  over the query :func:`select_rows` builds (filters, project scope, sort,
  marker, offset, limit);
* writing: :func:`writes`, a method run in one write transaction that is run
  again whole on a deadlock or a lost connection
  (:func:`~resize_sched.db.retry.retry_on_deadlock`).

The retry itself is :mod:`resize_sched.db.retry`, the compare-and-swap
updates :mod:`resize_sched.db.cas`, the value checks
:mod:`resize_sched.db.values`; their names are re-exported here, where the
data API modules (and others) have always imported them from.
"""

import contextlib
import datetime
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

import sqlalchemy as sa
from oslo_db import exception as db_exc
from sqlalchemy.orm import Session, sessionmaker

from resize_sched.db import engines, models
from resize_sched.db.cas import (
    CAS_KEY,
    cas_update,
    check_values,
    describe,
    describe_expected,
    match,
    update_where,
)
from resize_sched.db.retry import (
    DEFAULT_RETRY,
    RetryPolicy,
    already_done,
    commit_may_have_landed,
    found_done,
    is_connection_lost,
    is_deadlock,
    retry_on_deadlock,
)
from resize_sched.db.values import text, whole_number

__all__ = [
    "CAS_KEY",
    "DEFAULT_RETRY",
    "INTEGRITY_ERRORS",
    "RetryPolicy",
    "SessionSource",
    "already_done",
    "cas_update",
    "check_values",
    "commit_may_have_landed",
    "describe",
    "describe_expected",
    "found_done",
    "is_connection_lost",
    "is_deadlock",
    "match",
    "retry_on_deadlock",
    "select_rows",
    "stamp_after",
    "text",
    "update_where",
    "whole_number",
    "writes",
]

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

_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S", bound="SessionSource")


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


def select_rows(
    model: Any,
    *conditions: sa.ColumnElement[bool] | None,
    optional: Mapping[str, Any] | None = None,
    order_by: Sequence[Any] = (),
    after: Sequence[Any] | None = None,
    offset: int = 0,
    limit: int | None = None,
    **equal: Any,
) -> sa.Select[Any]:
    """The one shape of a listing: the rows of ``model`` that pass every
    filter, in order, one page of them.

    :param model: the ORM class selected.
    :param conditions: WHERE clauses; a None is a filter not asked for (a
        :func:`~resize_sched.db.project_scope.project_condition` of every
        project) and is left out.
    :param optional: the filters a caller may leave out: column name ->
        value, a None value being one not asked for (``host=None``: on any
        host).
    :param order_by: the sort, ascending, the last column unique.
    :param after: a marker: the values of the ``order_by`` columns of the
        row the previous page ended with; the page starts after it.
    :param offset: rows skipped first (0: none).
    :param limit: at most this many rows (None: all).
    :param equal: column name -> value the column must :func:`match` (None:
        NULL; a list: any of).
    """
    query = sa.select(model).where(
        *(c for c in conditions if c is not None),
        *(match(getattr(model, name), value) for name, value in equal.items()),
        *(
            getattr(model, name) == value
            for name, value in (optional or {}).items()
            if value is not None
        ),
    )
    if after is not None:
        # NOTE: (a, b) > (x, y) spelled out, which every backend's index serves.
        later = [
            sa.and_(*(c == v for c, v in zip(order_by[:i], after[:i])), order_by[i] > after[i])
            for i in range(len(order_by))
        ]
        query = query.where(sa.or_(*later))
    if order_by:
        query = query.order_by(*order_by)
    if offset:
        query = query.offset(offset)
    if limit is not None:
        query = query.limit(limit)
    return query


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

    def _list(self, model: Any, *conditions: Any, **options: Any) -> list[Any]:
        """Every row :func:`select_rows` selects, in a read transaction of its own."""
        with self._reader() as session:
            return list(session.scalars(select_rows(model, *conditions, **options)))

    def _first(self, model: Any, *conditions: Any, **options: Any) -> Any:
        """The first row :func:`select_rows` selects, or None, in a read
        transaction of its own."""
        with self._reader() as session:
            return session.scalars(select_rows(model, *conditions, **options)).first()


def writes(
    method: Callable[Concatenate[_S, Session, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """A data API write: ``method(self, session, ...)`` is called as
    ``method(self, ...)``, with ``session`` in a write transaction of its own
    (:meth:`SessionSource._writer`) committed when it returns, and the whole
    run again on a deadlock or a lost connection
    (:func:`~resize_sched.db.retry.retry_on_deadlock`, whose log lines name
    the method as before).

    The method must do nothing outside the transaction that cannot be done
    twice (no RPC, no Placement call).
    """

    @functools.wraps(method)
    def in_transaction(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._writer() as session:
            return method(self, session, *args, **kwargs)

    return retry_on_deadlock(in_transaction)
