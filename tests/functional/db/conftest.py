"""Backends for the database tests: SQLite always, MariaDB and PostgreSQL when given.

``db`` is parametrised over the three backends. Each backend gets one fresh
database per test run (``rs_test_<hex>`` on a server, a file under the run's
tmp dir for SQLite), synced once and emptied after every test. Tests that
need an empty database of their own (schema sync) take ``empty_url``.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from resize_sched.db import session
from resize_sched.db.api import Database
from tests.functional.fixtures import database as db_fixture

BACKENDS = [
    pytest.param(db_fixture.SQLITE, id="sqlite"),
    pytest.param(db_fixture.MYSQL, id="mysql", marks=pytest.mark.mysql),
    pytest.param(db_fixture.POSTGRESQL, id="postgresql", marks=pytest.mark.postgresql),
]


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The backend name; skips (or fails under CI=true) when its URL is not set."""
    name: str = request.param
    if name != db_fixture.SQLITE:
        db_fixture.server_url(name)
    return name


def _new_database(backend: str, directory: Path) -> tuple[str, db_fixture.ScratchDatabase | None]:
    if backend == db_fixture.SQLITE:
        return db_fixture.sqlite_url(directory), None
    scratch = db_fixture.ScratchDatabase(db_fixture.server_url(backend))
    return scratch.create(), scratch


@pytest.fixture(scope="session")
def backend_url(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of this run's fresh (empty) database on ``backend``."""
    url, scratch = _new_database(backend, tmp_path_factory.mktemp(f"db-{backend}"))
    yield url
    if scratch is not None:
        scratch.drop()


@pytest.fixture(scope="session")
def synced_db(backend_url: str) -> Iterator[Database]:
    """This run's database on ``backend``, schema synced once."""
    db = Database(backend_url)
    db.sync()
    yield db
    db.dispose()


@pytest.fixture
def db(synced_db: Database) -> Iterator[Database]:
    """A synced database with no rows; emptied again after the test."""
    db_fixture.wipe(synced_db)
    yield synced_db
    db_fixture.wipe(synced_db)


@pytest.fixture
def empty_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """URL of a database of its own, with no schema at all."""
    url, scratch = _new_database(backend, tmp_path)
    yield url
    if scratch is not None:
        scratch.drop()


@pytest.fixture
def admin(backend_url: str) -> Iterator[sa.Engine]:
    """An engine of its own: another client of the same database."""
    engine = sa.create_engine(backend_url)
    yield engine
    engine.dispose()


@pytest.fixture
def quick(db: Database) -> Iterator[Database]:
    """``db`` retrying without waiting."""
    db.retry_policy = session.RetryPolicy(max_retries=3, retry_interval=0, max_retry_interval=0)
    yield db
    db.retry_policy = session.DEFAULT_RETRY
