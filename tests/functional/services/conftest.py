"""Fixtures for tests of the deployed services: the all-in-one in-process."""

from __future__ import annotations

import pathlib
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import openstack
import pytest

from resize_sched import conf as rs_conf
from resize_sched.all_in_one import AllInOne
from resize_sched.placement.client import PlacementClient
from tests.functional.fixtures.invariants import check_invariants


class Deployment:
    """A running all-in-one with an openstacksdk connection and checks."""

    def __init__(self, aio: AllInOne) -> None:
        self.aio = aio
        self.conn = openstack.connect(
            auth_type="admin_token",
            auth={"endpoint": aio.api_endpoint, "token": "admin:admin"},
            compute_endpoint_override=aio.api_endpoint,
            load_yaml_config=False,
            load_envvars=False,
        )
        self.placement = PlacementClient.from_conf(aio.conf)
        self.hosts = {rp["name"]: rp["uuid"] for rp in self.placement.list_resource_providers()}

    def check(self) -> None:
        check_invariants(self.aio.db, self.placement, self.hosts)

    def usage(self, host: str) -> dict[str, int]:
        return self.placement.get_usages(self.hosts[host])

    def holds(self, consumer: str) -> dict[str, dict[str, int]]:
        return self.placement.get_allocations(consumer).allocations

    def on(self, host: str, **amounts: int) -> dict[str, dict[str, int]]:
        return {self.hosts[host]: amounts}

    def flavor(self, name: str, vcpus: int, ram: int, disk: int) -> Any:
        return self.conn.compute.create_flavor(name=name, vcpus=vcpus, ram=ram, disk=disk)

    def boot(self, name: str, flavor: Any) -> Any:
        server = self.conn.compute.create_server(name=name, flavor_id=flavor.id)
        server = self.conn.compute.wait_for_server(server, status="ACTIVE", wait=30, interval=0.05)
        self.check()
        return server

    def wait(self, server: Any, *statuses: str) -> Any:
        """Wait until the server is in one of ``statuses`` with no task."""
        import time

        deadline = time.monotonic() + 30
        while True:
            current = self.conn.compute.get_server(server.id)
            if current.status in statuses and current.task_state is None:
                return current
            if time.monotonic() > deadline:
                raise AssertionError(f"server stuck in {current.status}/{current.task_state}")
            time.sleep(0.05)

    def migration(self, server: Any) -> Any:
        migrations = [m for m in self.conn.compute.migrations() if m.server_id == server.id]
        return max(migrations, key=lambda m: int(m.id))


@pytest.fixture
def deploy(tmp_path: pathlib.Path) -> Iterator[Callable[..., Deployment]]:
    """Start an all-in-one from a config file's text; stopped at the end."""
    started: list[AllInOne] = []

    def factory(
        config: str = "", hosts: str = "host1:8:16384:200,host2:8:16384:200"
    ) -> Deployment:
        path = tmp_path / f"aio{len(started)}.conf"
        path.write_text(
            textwrap.dedent(
                f"""\
                [api]
                bind_host = 127.0.0.1
                bind_port = 0
                auth_strategy = noauth2
                [all_in_one]
                placement_port = 0
                hosts = {hosts}
                state_path = {tmp_path / f"state{len(started)}"}
                [compute]
                update_interval = 0
                """
            )
            + textwrap.dedent(config)
        )
        conf = rs_conf.new_conf()
        rs_conf.parse_args(conf, ["--config-file", str(path)])
        aio = AllInOne(conf)
        aio.start()
        started.append(aio)
        return Deployment(aio)

    yield factory
    for aio in started:
        aio.stop()
