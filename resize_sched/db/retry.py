"""Running a data API write again, whole, when the database aborted it or lost its connection.

A write transaction the database aborts to break a deadlock (on Galera: a
certification failure at COMMIT; on PostgreSQL: a serialization failure), or
whose connection is lost, is run again whole: every data API method that
writes is decorated with :func:`retry_on_deadlock`, oslo.db's
``wrap_db_retry(retry_on_deadlock=True, retry_on_disconnect=True)`` with
oslo.db's exception filters on the engine (:mod:`resize_sched.db.engines`).

A run whose connection was lost while it committed may have been committed
all the same. The next run then finds its own work done: a compare-and-swap
(:mod:`resize_sched.db.cas`) that finds the row already holding every value
it would write counts as done instead of "not in the expected state"
(:func:`already_done`), and the inserts that could be doubled look for their
own row first (:func:`commit_may_have_landed`, :func:`earlier_run_row`).

Every insert has a key the database holds unique, so that a run again
cannot write a second row even when it does not see the first one yet (on
Galera, a node that has not applied the earlier run's commit): a uuid the
caller chose once, outside the retried call (servers, migrations), one made
for the row by :func:`call_uuid` (the same in every run of one call), or a
natural key (a service's host and binary, a key pair's user and name). A
run again whose insert is then refused as a duplicate, after a commit that
may have landed, is run again once more: by then the earlier row is seen,
and found.
"""

import dataclasses
import functools
import threading
import uuid as uuidlib
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_log import log as logging

from resize_sched.db import engines

# NOTE: the logger of resize_sched.db.session, where these lines were first
# written: operators' filters and the HA log reader look for them there.
LOG = logging.getLogger("resize_sched.db.session")


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


def call_uuid(*parts: object) -> str:
    """A uuid for a row this data API call inserts, the same in every run of
    the call: made from the call's own random id (drawn once, when the
    outermost retried method was entered) and ``parts`` (what tells apart
    the rows one call inserts: a table, an action id, an event name). A run
    again after a lost COMMIT answer then writes the same uuid, which the
    database refuses as a duplicate if the first run's row is there.

    Outside a retried call (nothing runs it again) a new random uuid.
    """
    call = getattr(_retrying, "call", None)
    if call is None or not getattr(_retrying, "active", False):
        return str(uuidlib.uuid4())
    return str(uuidlib.uuid5(call, "/".join(str(p) for p in parts)))


def earlier_run_row(
    session: Any, model: Any, key: Mapping[str, Any], columns: Mapping[str, Any]
) -> Any:
    """After an insert of this call was refused as a duplicate: the row an
    earlier run of the same call committed though its answer was lost, or
    None (no such commit may have landed, or the row holding ``key`` is
    not the one this call writes).

    :param session: a session to read in (a new transaction).
    :param model: the ORM class inserted.
    :param key: the unique key the insert clashed on: column -> value.
    :param columns: what the insert writes; the row found must hold them all
        (SQL expressions and timestamps made at insert are left out).
    """
    if not commit_may_have_landed():
        return None
    found = session.scalars(sa.select(model).filter_by(**key)).first()
    if found is None:
        return None
    compared = {k: v for k, v in columns.items() if not isinstance(v, sa.ClauseElement)}
    if not all(getattr(found, k) == v for k, v in compared.items()):
        return None
    LOG.info("%r was created by an earlier run of this call (its COMMIT's answer was lost)", found)
    return found


def _reason(exc: BaseException) -> str:
    inner = getattr(exc, "inner_exception", None) or exc
    orig = getattr(inner, "orig", None) or inner
    return (str(orig).splitlines() or [type(orig).__name__])[0]


def _worth_another_run(exc: BaseException) -> bool:
    """Beyond oslo.db's own (deadlocks, lost connections): PostgreSQL's
    serialization failures, and a duplicate key after a COMMIT that may
    have landed (see the module's doc)."""
    if is_deadlock(exc):
        return True
    return isinstance(exc, db_exc.DBDuplicateEntry) and commit_may_have_landed()


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
        exception_checker=_worth_another_run,
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
            elif isinstance(exc, db_exc.DBDuplicateEntry) and commit_may_have_landed():
                # NOTE: its key is taken, most likely by the row of the earlier
                # run whose COMMIT landed; the next run sees it and finds it.
                what = "a row of an earlier run"
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
        _retrying.call = uuidlib.uuid4()
        _retrying.policy = policy
        try:
            result: _R = _retrier(run, policy)(*args, **kwargs)
            return result
        finally:
            _retrying.active, _retrying.landed = False, False

    return retried


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
