"""Build a SQLAlchemy engine for each supported backend.

* SQLite (``sqlite:///path``), the embedded default: WAL journal so readers
  never wait for the writer, foreign keys enforced, the parent directory
  created if missing. SQLAlchemy emits ``BEGIN`` itself (the ``sqlite3``
  driver's legacy transaction handling is turned off), and a session that
  writes begins with ``BEGIN IMMEDIATE``: it takes the write lock up front,
  waiting up to ``pool_timeout`` seconds, instead of failing with "database is
  locked" when it upgrades a read snapshot that another writer has moved on.
* MariaDB/MySQL with PyMySQL (``mysql+pymysql://``): utf8mb4, strict SQL mode.
* PostgreSQL with psycopg 3 (``postgresql+psycopg://``).

``mysql://``, ``mariadb://`` and ``postgresql://`` without a driver get the
supported driver rather than SQLAlchemy's default one (which is not installed).

Every engine has oslo.db's exception filters: a driver's error comes out as
oslo.db's exception for what it means (:class:`~oslo_db.exception.DBDeadlock`,
:class:`~oslo_db.exception.DBConnectionError`,
:class:`~oslo_db.exception.DBDuplicateEntry`,
:class:`~oslo_db.exception.DBReferenceError`...; the SQLAlchemy error is its
``inner_exception``), which :func:`resize_sched.db.session.retry_on_deadlock`
and the data API act on whatever the backend. A connection lost while
committing is noted (:func:`commit_interrupted`): that transaction may have
been committed.

A connection given back to the pool is rolled back only when a transaction
may still be open on it (:func:`_resetter`): after SQLAlchemy's own clean
``COMMIT`` or ``ROLLBACK`` none is, and its unconditional rollback on return
would be one more round trip for every transaction.

A pooled connection is checked before use without a round trip
(:func:`_checker`): one whose socket has something to read while it sat idle
(the server closed it, or sent an error before closing), or that sat idle
longer than :data:`PING_AFTER_IDLE`, is pinged first, as SQLAlchemy's
``pool_pre_ping`` pings every one, and replaced, with every connection
pooled before it, when the ping finds it gone.
"""

import contextlib
import functools
import pathlib
import select
import threading
import time
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
from oslo_log import log as logging
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.pool import StaticPool

LOG = logging.getLogger(__name__)

#: Execution option marking a connection that will write (see module doc).
WRITE_OPTION = "resize_sched_write"

_DEFAULT_DRIVERS = {
    "mysql": "mysql+pymysql",
    "mariadb": "mariadb+pymysql",
    "postgresql": "postgresql+psycopg",
}


def normalize_url(url: str | URL) -> URL:
    """Parse ``url`` and give it the driver resize_sched supports.

    :param url: a SQLAlchemy URL.
    :returns: the parsed URL, with the default driver and charset filled in.
    :raises sqlalchemy.exc.ArgumentError: not a URL.
    """
    parsed = make_url(url)
    if parsed.drivername in _DEFAULT_DRIVERS:
        parsed = parsed.set(drivername=_DEFAULT_DRIVERS[parsed.drivername])
    if parsed.get_backend_name() in ("mysql", "mariadb") and "charset" not in parsed.query:
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    return parsed


def _is_sqlite_memory(url: URL) -> bool:
    return url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"


def _ensure_sqlite_dir(url: URL) -> None:
    if _is_sqlite_memory(url) or url.query.get("uri"):
        return
    parent = pathlib.Path(url.database or "").expanduser().parent
    if not parent.is_dir():
        LOG.info("Creating directory %s for the SQLite database", parent)
        parent.mkdir(parents=True, exist_ok=True)


def _sqlite_connect(dbapi_connection: Any, connection_record: Any) -> None:
    # NOTE: let SQLAlchemy, not the driver, decide when a transaction begins
    # (see _sqlite_begin); the driver's legacy mode never begins one for
    # SELECT or DDL, which breaks repeatable reads and transactional DDL.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    if conn.get_execution_options().get(WRITE_OPTION):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


def _mysql_connect(
    dbapi_connection: Any, connection_record: Any, *, sync_wait: int | None = None
) -> None:
    # NOTE: strict mode turns a silently truncated or coerced value into an
    # error, as oslo.db does; TRADITIONAL includes STRICT_ALL_TABLES.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("SET SESSION sql_mode = 'TRADITIONAL'")
        if sync_wait is not None:
            # NOTE: Galera's causality checks (see [database]
            # mysql_wsrep_sync_wait); the value is a checked int.
            cursor.execute(f"SET SESSION wsrep_sync_wait = {int(sync_wait)}")
    finally:
        cursor.close()


#: where a connection's pool record notes that SQLAlchemy ended the
#: transaction last begun on it, by COMMIT or ROLLBACK, and nothing failed on
#: it since (see :func:`_resetter`)
_ENDED = "resize_sched_ended"


def _in_transaction(dbapi_connection: Any) -> bool:
    """Whether the driver says a transaction is open on ``dbapi_connection``
    (no round trip). PyMySQL's flag, from the server's last OK packet, says so
    once a statement has written, not after reads alone; psycopg and sqlite3
    always know."""
    status = getattr(dbapi_connection, "server_status", None)  # PyMySQL
    if isinstance(status, int):
        return bool(status & _MYSQL_IN_TRANS)
    info = getattr(dbapi_connection, "info", None)  # psycopg 3
    pg_status = getattr(info, "transaction_status", None)
    if pg_status is not None:
        return int(pg_status) != _PG_IDLE
    in_transaction = getattr(dbapi_connection, "in_transaction", None)  # sqlite3
    if isinstance(in_transaction, bool):
        return in_transaction
    return True


#: PyMySQL's SERVER_STATUS_IN_TRANS bit, psycopg's TransactionStatus.IDLE
_MYSQL_IN_TRANS = 1
_PG_IDLE = 0


def _resetter(dialect: Any) -> Callable[[Any, Any, Any], None]:
    """The pool's ``reset`` listener for ``dialect``'s engine (the engine's
    own reset on return is off): a connection given back to the pool is
    rolled back unless SQLAlchemy ended its last transaction cleanly
    (:func:`_ended`, no statement failed since) and the driver does not say
    one is open (a statement sent on the raw connection after that end)."""

    def reset(dbapi_connection: Any, record: Any, state: Any) -> None:
        ended = record.info.pop(_ENDED, False) if record is not None else False
        if state.terminate_only or not state.asyncio_safe:
            return
        if not ended or _in_transaction(dbapi_connection):
            dialect.do_rollback(dbapi_connection)

    return reset


def _mark(conn: Connection, ended: bool) -> None:
    with contextlib.suppress(Exception):
        conn.connection.info[_ENDED] = ended


def _begin_marked(conn: Connection) -> None:
    _mark(conn, False)


def _ended(conn: Connection) -> None:
    """``commit``, ``rollback``: SQLAlchemy ends the transaction (a failure
    of that very end comes to :func:`_note_failure` after this)."""
    _mark(conn, True)


def _note_failure(context: Any) -> None:
    """``handle_error``: a statement, commit or rollback failed; the
    connection is rolled back before it is used again."""
    connection = context.connection
    if connection is not None and not connection.invalidated:
        _mark(connection, False)


#: seconds a pooled connection may sit idle and still be used unpinged when
#: its socket is quiet: past it, it is pinged at checkout (a firewall or
#: proxy may have dropped it without a word)
PING_AFTER_IDLE = 30.0

#: where a connection's pool record notes when it was last given back
_IDLE_SINCE = "resize_sched_idle_since"


def _socket_of(dbapi_connection: Any) -> int | None:
    """The file descriptor of the driver's socket (None: no socket, a closed
    one, or a driver we do not know)."""
    try:
        sock = getattr(dbapi_connection, "_sock", None)  # PyMySQL
        if sock is not None:
            return int(sock.fileno())
        pgconn = getattr(dbapi_connection, "pgconn", None)  # psycopg 3
        if pgconn is not None:
            return int(pgconn.socket)
    except Exception:  # closed: psycopg raises, a closed socket says -1
        return None
    return None


def _quiet(fd: int) -> bool:
    """Whether nothing waits to be read on ``fd``: no data, end of file or
    error (an idle database connection gets nothing unless it is going)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def _checker(dialect: Any) -> dict[str, Callable[..., None]]:
    """The pool's ``connect``, ``checkout`` and ``checkin`` listeners for
    ``dialect``'s engine, in place of ``pool_pre_ping``: a connection is used
    as it is when its socket is quiet and it was made or given back less than
    :data:`PING_AFTER_IDLE` seconds ago; otherwise it is pinged, and a ping
    that finds it disconnected has the pool replace it and every connection
    pooled before it (as ``pool_pre_ping`` does)."""

    def checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        idle = time.monotonic() - record.info.get(_IDLE_SINCE, 0.0)
        fd = _socket_of(dbapi_connection)
        if idle < PING_AFTER_IDLE and fd is not None and fd >= 0 and _quiet(fd):
            return
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                LOG.info("A pooled database connection is gone (%s); reconnecting", exc)
                raise sa.exc.InvalidatePoolError() from exc
            raise

    def idle_from_now(dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_IDLE_SINCE] = time.monotonic()

    return {"connect": idle_from_now, "checkout": checkout, "checkin": idle_from_now}


# NOTE: per thread, as a transaction runs on one: whether the last
# transaction begun has sent its COMMIT, and whether a connection was lost
# while it did.
_commits = threading.local()


def _committing(conn: Connection) -> None:
    _commits.committing = True


def _begun(*args: Any) -> None:
    _commits.committing = False


def _note_lost_commit(context: Any) -> None:
    chained = getattr(context, "chained_exception", None)
    lost = context.is_disconnect or isinstance(chained, db_exc.DBConnectionError)
    if (
        lost
        and context.statement is None
        and context.connection is not None
        and not getattr(context, "is_pre_ping", False)
        and getattr(_commits, "committing", False)
    ):
        _commits.lost = True


def _connect_failed(context: Any) -> None:
    """``handle_error``, before oslo.db's filters: psycopg 3 words a failure
    to connect "connection failed: ..." where oslo.db's filter looks for
    psycopg2's "could not connect to server"; it is marked a disconnect, so
    that it becomes :class:`~oslo_db.exception.DBConnectionError` on
    PostgreSQL as on MySQL (and a write is run again, or given up early
    when nothing answers: :mod:`resize_sched.db.retry`)."""
    if (
        context.dialect.name == "postgresql"
        and context.connection is None
        and str(context.original_exception).startswith("connection failed")
    ):
        context.is_disconnect = True


def commit_interrupted(*, clear: bool = True) -> bool:
    """Whether a connection was lost, on this thread, while a transaction
    was being committed, since the last time this was asked: the database
    may have committed it or not.

    :param clear: forget it once told.
    """
    lost = bool(getattr(_commits, "lost", False))
    if clear:
        _commits.lost = False
    return lost


def create_engine(
    url: str | URL,
    *,
    max_pool_size: int = 5,
    max_overflow: int = 10,
    pool_timeout: int = 30,
    connection_recycle_time: int = 3600,
    echo: bool = False,
    mysql_wsrep_sync_wait: int | None = None,
) -> sa.Engine:
    """Create an engine for ``url`` set up for its backend.

    :param url: SQLAlchemy URL (sqlite, mysql+pymysql, postgresql+psycopg).
    :param max_pool_size: connections kept open.
    :param max_overflow: extra connections allowed in a burst.
    :param pool_timeout: seconds to wait for a pooled connection (and, on
        SQLite, for the write lock).
    :param connection_recycle_time: seconds after which a connection is replaced.
    :param echo: log every statement.
    :param mysql_wsrep_sync_wait: MariaDB Galera: the ``wsrep_sync_wait``
        each connection sets (None: the server's).
    :returns: the engine; nothing is connected yet.
    :raises sqlalchemy.exc.ArgumentError: a malformed URL.
    :raises ImportError: the backend's driver is not installed.
    """
    parsed = normalize_url(url)
    backend = parsed.get_backend_name()
    kwargs: dict[str, Any] = {"echo": echo}
    if backend == "sqlite":
        connect_args: dict[str, Any] = {"timeout": float(pool_timeout)}
        if _is_sqlite_memory(parsed):
            # NOTE: one connection shared by every thread, the only way for an
            # in-memory database to be seen by all; for tests only.
            connect_args["check_same_thread"] = False
            kwargs["poolclass"] = StaticPool
        else:
            _ensure_sqlite_dir(parsed)
            kwargs.update(pool_size=max_pool_size, max_overflow=max_overflow)
            kwargs.update(pool_timeout=pool_timeout, pool_recycle=connection_recycle_time)
        kwargs["connect_args"] = connect_args
    else:
        kwargs.update(
            pool_size=max_pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
            pool_recycle=connection_recycle_time,
        )
    kwargs["pool_reset_on_return"] = None  # see _resetter
    engine = sa.create_engine(parsed, **kwargs)
    event.listen(engine.pool, "reset", _resetter(engine.dialect))
    if backend != "sqlite":
        for name, listener in _checker(engine.dialect).items():
            event.listen(engine.pool, name, listener)
    if backend == "sqlite":
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    elif backend in ("mysql", "mariadb"):
        event.listen(
            engine,
            "connect",
            functools.partial(_mysql_connect, sync_wait=mysql_wsrep_sync_wait),
        )
    # NOTE: oslo.db's filters first (after the connect failures they need
    # told): the lost-commit check reads what they decided (a disconnect).
    event.listen(engine, "handle_error", _connect_failed)
    exc_filters.register_engine(engine)
    event.listen(engine, "handle_error", _note_lost_commit)
    event.listen(engine, "handle_error", _note_failure)
    event.listen(engine, "begin", _begin_marked)
    event.listen(engine, "commit", _ended)
    event.listen(engine, "rollback", _ended)
    event.listen(engine, "begin", _begun)
    event.listen(engine, "commit", _committing)
    LOG.debug("Created %s engine for %s", backend, parsed.render_as_string(hide_password=True))
    return engine
