"""Running a data API write again, whole, when the database aborted it or lost its connection.

A write transaction the database aborts to break a deadlock (on Galera: a
certification failure at COMMIT; on PostgreSQL: a serialization failure), or
whose connection is lost, is run again whole: every data API method that
writes is decorated with :func:`retry_on_deadlock`, which reads oslo.db's
exception filters on the engine (:mod:`resize_sched.db.engines`) and waits
between runs as oslo.db's ``wrap_db_retry`` does. Connection errors have a
budget of their own (:class:`RetryPolicy`): a lost connection or a Galera
node still joining is tried again for ``connection_retry_timeout`` seconds,
long enough for a proxy to move to another node; a database that is not
there at all (connection refused, no route, a name that does not resolve)
only once more, then the write fails with :class:`DatabaseUnreachable`.

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
import random
import re
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
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
    :param connection_retry_timeout: seconds a write may keep running again
        after connection errors, counted from its first run (a database
        that cannot be reached at all is given up sooner:
        :data:`UNREACHABLE_ATTEMPTS`).
    """

    max_retries: int = 10
    retry_interval: float = 0.1
    inc_retry_interval: bool = True
    max_retry_interval: float = 2.0
    connection_retry_timeout: float = 15.0


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


#: runs of a write, at most, while the database cannot be reached at all
#: (:func:`is_unreachable`): the first and one quick reconnect try
UNREACHABLE_ATTEMPTS = 2

# NOTE: what the driver says when nothing answers at the address: refused,
# no route, a name that does not resolve (PyMySQL's 2003 and 2005 carry the
# socket's words; psycopg's "connection failed" its own).
_UNREACHABLE = re.compile(
    r"connection refused|no route to host|network is unreachable|"
    r"name or service not known|nodename nor servname|name resolution|"
    r"could not translate host name|unknown mysql server host",
    re.IGNORECASE,
)


def is_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database is not there at all: a connection
    refused, no route to its host, its name not resolving. Not a connection
    lost in use, nor a Galera node still joining (1047), nor a proxy that
    accepted and then closed because no node took it: those a new run after
    a short wait may get through (:func:`is_connection_lost`)."""
    return is_connection_lost(exc) and bool(_UNREACHABLE.search(_reason(exc)))


class DatabaseUnreachable(db_exc.DBConnectionError):
    """A write given up because the database cannot be reached: the message
    names where it was looked for and what to check."""

    def __init__(self, where: str, reason: str, attempts: int, inner: BaseException) -> None:
        super().__init__(inner)
        self.where, self.reason, self.attempts = where, reason, attempts
        self.message = (
            f"The database at {where} cannot be reached ({reason}); gave up after "
            f"{attempts} attempts. Check that the database server, or the proxy in front "
            "of it, runs and listens there, that its host name resolves from this host, "
            "and the [database] connection option."
        )
        self.args = (self.message,)

    def __str__(self) -> str:
        return self.message


def _where(owner: Any) -> str:
    """``host:port`` of the database ``owner`` (a data API object) writes to."""
    url = getattr(getattr(owner, "engine", None), "url", None)
    if url is None or not url.host:
        return "the configured address"
    return f"{url.host}:{url.port}" if url.port else str(url.host)


def _what_failed(exc: BaseException) -> str | None:
    """Why a run failed, in the words of the log lines, when another run may
    succeed; None otherwise. Notes a COMMIT whose answer was lost."""
    if is_connection_lost(exc):
        if engines.commit_interrupted():
            _retrying.landed = True
        return "database unreachable" if is_unreachable(exc) else "database connection lost"
    if is_deadlock(exc):
        return "database deadlock"
    if isinstance(exc, db_exc.DBDuplicateEntry) and commit_may_have_landed():
        # NOTE: its key is taken, most likely by the row of the earlier run
        # whose COMMIT landed; the next run sees it and finds it.
        return "a row of an earlier run"
    return None


class _Waits:
    """oslo.db's waits between runs: ``retry_interval`` first, then doubled
    each time when ``inc_retry_interval`` (drawn at random below that after
    a deadlock, so that the losers do not meet again), never more than
    ``max_retry_interval``."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.ceiling = self.next = policy.retry_interval

    def after(self, exc: BaseException) -> float:
        """The wait before the next run; the one after it is worked out."""
        wait, policy = self.next, self.policy
        if policy.inc_retry_interval:
            self.ceiling *= 2
            jitter = isinstance(exc, db_exc.DBDeadlock)
            self.next = random.uniform(0, self.ceiling) if jitter else self.ceiling  # noqa: S311
        self.next = min(self.next, policy.max_retry_interval)
        return min(wait, policy.max_retry_interval)


def _run_again(name: str, owner: Any, method: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    """Run ``method`` until it succeeds, fails in a way no new run mends, or
    the policy says to stop (see :func:`retry_on_deadlock`)."""
    policy: RetryPolicy = _retrying.policy
    waits, started = _Waits(policy), time.monotonic()
    while True:
        _retrying.attempt += 1
        engines.commit_interrupted()  # what an earlier call left is not ours
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            what = _what_failed(exc)
            if what is None:
                raise
            unreachable = what == "database unreachable"
            attempts = policy.max_retries + 1
            if unreachable:
                attempts = min(attempts, UNREACHABLE_ATTEMPTS)
            wait = waits.after(exc)
            spent = time.monotonic() - started + wait
            out_of_time = is_connection_lost(exc) and spent > policy.connection_retry_timeout
            if _retrying.attempt >= attempts or out_of_time:
                LOG.warning(
                    "%s: %s, giving up after %d attempts%s: %s",
                    name,
                    what,
                    _retrying.attempt,
                    " ([database] db_connection_retry_timeout)" if out_of_time else "",
                    _reason(exc),
                )
                if unreachable:
                    where = _where(owner)
                    raise DatabaseUnreachable(where, _reason(exc), _retrying.attempt, exc) from exc
                raise
            LOG.info(
                "%s: %s (attempt %d of %d), retrying the transaction: %s",
                name,
                what,
                _retrying.attempt,
                attempts,
                _reason(exc),
            )
            time.sleep(wait)


def retry_on_deadlock(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a data API write again, whole, when its transaction failed in a way
    a new run may not: a deadlock, lock wait time-out or Galera
    certification failure (:func:`is_deadlock`), or a connection lost or
    refused (:func:`is_connection_lost`).

    The loop waits as oslo.db's :func:`~oslo_db.api.wrap_db_retry` does,
    with the policy of the object the method belongs to (its
    ``retry_policy``, from the ``[database]`` options; :data:`DEFAULT_RETRY`
    otherwise), and stops early on connection errors: after
    ``connection_retry_timeout`` seconds, and after
    :data:`UNREACHABLE_ATTEMPTS` runs when the database cannot be reached at
    all (:func:`is_unreachable`), raising :class:`DatabaseUnreachable`,
    which names the database's address and what to check. The
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

    @functools.wraps(method)
    def retried(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if getattr(_retrying, "active", False):
            return method(*args, **kwargs)
        owner = args[0] if args else None
        policy = getattr(owner, "retry_policy", DEFAULT_RETRY)
        if not isinstance(policy, RetryPolicy):
            policy = DEFAULT_RETRY
        _retrying.active, _retrying.attempt, _retrying.landed = True, 0, False
        _retrying.found_done = False
        _retrying.call = uuidlib.uuid4()
        _retrying.policy = policy
        try:
            result: _R = _run_again(name, owner, method, args, kwargs)
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
