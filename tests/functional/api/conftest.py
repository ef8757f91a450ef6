"""Fixtures of the API tests: a fresh harness per test."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from resize_sched import conf as rs_conf
from tests.functional.api.harness import ApiHarness, CastBus, WaitressThread


@pytest.fixture(scope="session")
def cast_bus() -> Iterator[CastBus]:
    """One recording conductor on a fake:// transport for the whole session."""
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    bus = CastBus(conf)
    yield bus
    bus.close()


@pytest.fixture
def api(tmp_path: Path, cast_bus: CastBus) -> Iterator[ApiHarness]:
    """The API over a fresh SQLite database, its casts recorded."""
    harness = ApiHarness(tmp_path, bus=cast_bus)
    yield harness
    harness.close()


@pytest.fixture
def served(api: ApiHarness) -> Iterator[WaitressThread]:
    """``api`` served by waitress on 127.0.0.1, for real HTTP clients."""
    with WaitressThread(api.app) as server:
        yield server
