"""Backend set-up: SQLite pragmas and directories; timestamps on every backend."""

import datetime
import pathlib
import time
from typing import Any

import pytest
import sqlalchemy as sa
from oslo_db import exception as db_exc

from resize_sched import conf as rs_conf
from resize_sched.db import engines, models
from resize_sched.db.api import Database
from resize_sched.db.session import INTEGRITY_ERRORS
from tests.functional.fixtures import database as db_fixture


def test_sqlite_wal_foreign_keys_and_parent_dir(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "a" / "b" / "rs.sqlite"
    with Database(f"sqlite:///{path}") as db:
        with db.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert path.parent.is_dir()


def test_sqlite_in_memory(tmp_path: pathlib.Path) -> None:
    with Database("sqlite://") as db:
        db.sync()
        db.flavor_create("m1", 1, 512, 1)
        assert [f.name for f in db.flavor_list()] == ["m1"]


def test_foreign_keys_enforced(db: Database) -> None:
    # Bypass the API's own check to see the database refuse an orphan.
    table = models.RequestSpec.__table__
    try:
        with db.engine.begin() as conn:
            conn.execute(
                table.insert().values(
                    server_uuid="nope",
                    resources={},
                    required_traits=[],
                    ignore_hosts=[],
                    force_hosts=[],
                    scheduler_hints={},
                    created_at=models.utcnow(),
                )
            )
    except INTEGRITY_ERRORS as exc:
        # NOTE: oslo.db's filters name it: a reference to no row.
        assert isinstance(exc, db_exc.DBReferenceError), exc
    else:
        raise AssertionError("orphan request spec accepted")


def test_timestamps_are_utc_with_microseconds(db: Database) -> None:
    flavor = db.flavor_create("m1", 1, 512, 1)
    before = models.utcnow()
    server = db.server_create(name="vm", project_id="p", user_id="u", flavor=flavor)
    got = db.server_get(server.uuid)
    assert got.created_at.tzinfo is not None
    assert got.created_at.utcoffset() == datetime.timedelta(0)
    assert got.created_at == server.created_at
    assert abs(got.created_at - before) < datetime.timedelta(seconds=5)


def test_from_conf(tmp_path: pathlib.Path) -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [])
    conf.set_override("state_path", str(tmp_path / "state"))
    conf.set_override("max_pool_size", 2, group="database")
    with Database.from_conf(conf) as db:
        assert db.engine.url.database == str(tmp_path / "state" / "resize_sched.sqlite")
        assert db.engine.pool.size() == 2
        db.sync()
        assert db.version() is not None


def test_fresh_sqlite_databases_are_at_head_and_apart(tmp_path: pathlib.Path) -> None:
    # NOTE: how long a fresh database takes is the benchmarks' business, not
    # a test's; what a test can hold is that each is whole and its own.
    dbs = [db_fixture.fresh_sqlite_database(tmp_path / str(i)) for i in range(3)]
    try:
        heads = {db.version() for db in dbs}
        assert len(heads) == 1 and None not in heads
        dbs[0].flavor_create("m1", 1, 512, 1)
        assert [[f.name for f in db.flavor_list()] for db in dbs] == [["m1"], [], []]
    finally:
        for db in dbs:
            db.dispose()


class _Rollbacks:
    """Counts the rollbacks the engine's dialect sends (the Session's own and
    the pool's reset on return alike)."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = db.engine.dialect.do_rollback

        def counted(dbapi_connection: Any) -> None:
            self.count += 1
            original(dbapi_connection)

        monkeypatch.setattr(db.engine.dialect, "do_rollback", counted)


def test_a_clean_transaction_is_not_rolled_back_on_return(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollbacks = _Rollbacks(db, monkeypatch)
    db.flavor_create("m1", 1, 512, 1)  # a write, committed
    assert [f.name for f in db.flavor_list()] == ["m1"]  # a read, committed
    assert rollbacks.count == 0


def test_a_transaction_left_open_is_rolled_back_on_return(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollbacks = _Rollbacks(db, monkeypatch)
    raw = db.engine.raw_connection()
    cursor = raw.cursor()
    if db.engine.dialect.name == "sqlite":
        cursor.execute("BEGIN")  # the driver's own transactions are off
    cursor.execute("SELECT COUNT(*) FROM flavors")
    cursor.close()
    raw.close()  # back to the pool, a transaction open on the server
    assert rollbacks.count == 1
    with db.engine.connect() as conn:
        assert not engines._in_transaction(conn.connection.dbapi_connection)


def test_a_failed_transaction_is_rolled_back_once_and_the_connection_reused(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rollbacks = _Rollbacks(db, monkeypatch)
    table = models.RequestSpec.__table__
    with pytest.raises(INTEGRITY_ERRORS), db.engine.begin() as conn:
        conn.execute(
            table.insert().values(server_uuid="nope", resources={}, created_at=models.utcnow())
        )
    assert rollbacks.count == 1  # the transaction's own; none more on return
    db.flavor_create("m1", 1, 512, 1)
    assert [f.name for f in db.flavor_list()] == ["m1"]
    assert rollbacks.count == 1


@pytest.mark.parametrize("ended", ["commit", "rollback"])
def test_the_driver_knows_a_write_transaction_is_open(db: Database, ended: str) -> None:
    with db.engine.connect() as conn:
        dbapi_connection = conn.connection.dbapi_connection
        conn.execute(sa.delete(models.Flavor.__table__).where(models.Flavor.id == -1))
        assert engines._in_transaction(dbapi_connection)
        getattr(conn, ended)()
        assert not engines._in_transaction(dbapi_connection)


@pytest.fixture
def server_db(db: Database) -> Database:
    """``db`` on MariaDB or PostgreSQL: a server whose connections can be lost."""
    if db.engine.dialect.name == "sqlite":
        pytest.skip("SQLite has no server connection to lose")
    return db


def _session_id(conn: sa.Connection) -> int:
    mysql = conn.dialect.name == "mysql"
    return int(
        conn.exec_driver_sql(
            "SELECT CONNECTION_ID()" if mysql else "SELECT pg_backend_pid()"
        ).scalar_one()
    )


def _pings(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    pings: list[object] = []
    original = db.engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return bool(original(dbapi_connection))

    monkeypatch.setattr(db.engine.dialect, "do_ping", counted)
    return pings


def test_a_pooled_connection_in_use_is_not_pinged(
    server_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_db.flavor_list()  # the pool holds a connection, pinged once when new
    pings = _pings(server_db, monkeypatch)
    for _ in range(3):
        server_db.flavor_list()
    assert pings == []


def test_a_connection_idle_too_long_is_pinged(
    server_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_db.flavor_list()
    pings = _pings(server_db, monkeypatch)
    monkeypatch.setattr(engines, "PING_AFTER_IDLE", 0.0)
    for _ in range(3):
        server_db.flavor_list()
    assert len(pings) == 3


def test_a_connection_the_server_closed_is_replaced_unseen(
    server_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = server_db.engine
    with engine.connect() as conn:
        victim = _session_id(conn)
        fd = engines._socket_of(conn.connection.dbapi_connection)
    assert fd is not None
    killer = sa.create_engine(engine.url, poolclass=sa.pool.NullPool)
    try:
        with killer.connect() as conn:
            if engine.dialect.name == "mysql":
                conn.exec_driver_sql(f"KILL CONNECTION {victim}")
            else:
                conn.exec_driver_sql(f"SELECT pg_terminate_backend({victim})")
    finally:
        killer.dispose()
    deadline = time.monotonic() + 10
    while engines._quiet(fd) and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's close reaching our socket
    pings = _pings(server_db, monkeypatch)
    server_db.flavor_create("m1", 1, 512, 1)  # no error: the pool reconnected
    assert len(pings) == 1
    with engine.connect() as conn:
        assert _session_id(conn) != victim
    assert [f.name for f in server_db.flavor_list()] == ["m1"]
