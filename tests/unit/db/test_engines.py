"""URL handling and per-backend engine set-up (no database server needed)."""

import socket

import pytest
from sqlalchemy.pool import QueuePool, StaticPool

from resize_sched.db import engines


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("mysql://root@db/rs", "mysql+pymysql"),
        ("mariadb://root@db/rs", "mariadb+pymysql"),
        ("mysql+pymysql://root@db/rs", "mysql+pymysql"),
        ("postgresql://u@db/rs", "postgresql+psycopg"),
        ("postgresql+psycopg://u@db/rs", "postgresql+psycopg"),
        ("sqlite:////tmp/rs.sqlite", "sqlite"),
    ],
)
def test_default_drivers(url: str, driver: str) -> None:
    assert engines.normalize_url(url).drivername == driver


def test_mysql_charset_defaults_to_utf8mb4() -> None:
    assert engines.normalize_url("mysql://root@db/rs").query["charset"] == "utf8mb4"
    assert engines.normalize_url("mysql://root@db/rs?charset=utf8").query["charset"] == "utf8"


def test_pool_settings_reach_the_engine() -> None:
    engine = engines.create_engine(
        "postgresql://u:pw@db/rs", max_pool_size=7, max_overflow=3, pool_timeout=9
    )
    try:
        assert isinstance(engine.pool, QueuePool)
        assert engine.pool.size() == 7
        assert engine.pool._max_overflow == 3
        assert engine.pool._timeout == 9
        assert engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


def test_sqlite_memory_shares_one_connection() -> None:
    engine = engines.create_engine("sqlite://")
    try:
        assert isinstance(engine.pool, StaticPool)
    finally:
        engine.dispose()


def test_sqlite_file_creates_parent_dir(tmp_path) -> None:
    target = tmp_path / "x" / "y" / "db.sqlite"
    engine = engines.create_engine(f"sqlite:///{target}")
    engine.dispose()
    assert target.parent.is_dir()
    assert not target.exists()  # nothing connects until the first query


def test_a_socket_is_quiet_until_its_peer_writes_or_closes() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        assert engines._quiet(ours.fileno())
        theirs.sendall(b"\xff")  # an error packet, say
        assert not engines._quiet(ours.fileno())
        assert ours.recv(1) == b"\xff"
        assert engines._quiet(ours.fileno())
        theirs.close()  # the server went away
        assert not engines._quiet(ours.fileno())
