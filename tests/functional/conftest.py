"""Fixtures shared by the functional tests.

Each service the tests need has its own fixture class under
``tests/functional/fixtures/``; the pytest fixtures here only start and stop
them, fresh for every test.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from resize_sched.placement.client import PlacementClient
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.database import fresh_sqlite_database
from tests.functional.fixtures.placement import PlacementHTTP, PlacementInProcess
from tests.functional.fixtures.rabbit import broker_url

# -- Placement -------------------------------------------------------------------


@pytest.fixture
def placement(tmp_path: Path) -> Iterator[PlacementInProcess]:
    """A real Placement on its own fresh SQLite database, reached in-process."""
    with PlacementInProcess(str(tmp_path / "placement")) as service:
        yield service


@pytest.fixture
def placement_http(tmp_path: Path) -> Iterator[PlacementHTTP]:
    """A real Placement on its own fresh database, served on 127.0.0.1."""
    with PlacementHTTP(str(tmp_path / "placement-http")) as service:
        yield service


@pytest.fixture
def placement_client(placement: PlacementInProcess) -> PlacementClient:
    """A PlacementClient built from ``[placement]`` config, for ``placement``."""
    return placement.client()


# -- A cloud: Placement + database + scheduler + task flows ----------------------


@pytest.fixture
def make_cloud(placement: PlacementInProcess, tmp_path: Path) -> Iterator[Callable[..., Cloud]]:
    """Build a :class:`Cloud` with a given strategy (and option overrides)."""
    db = fresh_sqlite_database(tmp_path / "db")

    def factory(strategy: str = "max_flavor", **options: Any) -> Cloud:
        overrides = tuple(
            (name, value, group)
            for group, values in options.items()
            for name, value in values.items()
        )
        return Cloud(placement, db, strategy=strategy, overrides=overrides)

    yield factory
    db.dispose()


# -- RabbitMQ ---------------------------------------------------------------------


@pytest.fixture
def rabbit_url() -> str:
    """The broker URL from the environment; skips (fails under CI=true) without it."""
    return broker_url()
