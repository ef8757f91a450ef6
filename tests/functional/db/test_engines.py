"""Backend set-up: SQLite pragmas and directories; timestamps on every backend."""

import datetime
import pathlib
import time

from oslo_db import exception as db_exc

from resize_sched import conf as rs_conf
from resize_sched.db import models
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


def test_fresh_sqlite_database_is_fast(tmp_path: pathlib.Path) -> None:
    start = time.monotonic()
    for i in range(5):
        db = db_fixture.fresh_sqlite_database(tmp_path / str(i))
        db.flavor_create("m1", 1, 512, 1)
        db.dispose()
    per_database = (time.monotonic() - start) / 5
    assert per_database < 1.0, f"a fresh SQLite database took {per_database:.3f}s"
