"""Fixtures of the API tests: a fresh harness per test."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from keystonemiddleware import fixture as ks_fixture

from resize_sched import conf as rs_conf
from resize_sched.api.app import build_app
from resize_sched.conductor import reports
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementInProcess
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


#: Where ``keystone_api``'s auth_token would send clients to get a token.
KEYSTONE = "http://keystone.test:5000/v3"


@pytest.fixture
def tokens() -> Iterator[ks_fixture.AuthTokenFixture]:
    """keystonemiddleware's stand-in for Keystone's token validation."""
    with ks_fixture.AuthTokenFixture() as fixture:
        yield fixture


@pytest.fixture
def keystone_api(api: ApiHarness, tmp_path: Path) -> ApiHarness:
    """``api`` rebuilt from a config file that leaves auth_strategy at its default."""
    config = tmp_path / "resize_sched.conf"
    config.write_text(f"[keystone_authtoken]\nwww_authenticate_uri = {KEYSTONE}\n")
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)])
    assert conf.api.auth_strategy == "keystone"
    api.app = build_app(conf, api.db, api.conductor)
    return api


@pytest.fixture
def served(api: ApiHarness) -> Iterator[WaitressThread]:
    """``api`` served by waitress on 127.0.0.1, for real HTTP clients."""
    with WaitressThread(api.app) as server:
        yield server


@pytest.fixture
def cloud(api: ApiHarness, placement: PlacementInProcess) -> ApiHarness:
    """The API harness, its ``[placement]`` pointing at the real Placement."""
    placement.configure(api.conf)
    return api


@pytest.fixture
def register(
    cloud: ApiHarness, placement: PlacementInProcess, placement_client: PlacementClient
) -> Callable[..., str]:
    """``register(host, ...)``: a provider of ours and its service's first report; its uuid.

    The arguments after ``host`` are :meth:`PlacementInProcess.add_host`'s.
    """

    def factory(
        host: str, vcpus: int = 4, memory_mb: int = 4096, disk_gb: int = 40, **extra_inventory: Any
    ) -> str:
        rp = placement.add_host(host, vcpus, memory_mb, disk_gb, **extra_inventory)
        inventory, generation = placement_client.get_inventories(rp)
        assert reports.record(
            cloud.db,
            placement_client,
            cloud.conf.placement.deployment_name,
            host=host,
            node=host,
            rp_uuid=rp,
            inventory=inventory,
            provider_generation=generation,
            version="1.0",
        )
        return rp

    return factory
