"""One sweep and one reaper per deployment, however many conductors run.

Three ``resize-sched-conductor`` daemons (two workers each, as three
conductor hosts would run them) share one database and a real Placement
served over HTTP behind a counting proxy. Only the holder of the sweep's
lease sweeps: over several scan intervals Placement sees the requests of
one scan per interval, a late claim of a deleted server is read and given
back once, and killing the holder hands the lease (and the reaper) to a
survivor.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import pytest

from resize_sched.db import models
from resize_sched.db.api import Database
from resize_sched.placement.client import INSTANCE, ConsumerWrite
from resize_sched.placement.embedded import PlacementHTTP
from tests.functional.fixtures.database import ScratchDatabase, sqlite_url
from tests.functional.fixtures.deployment import wait_for
from tests.functional.fixtures.fault_proxy import FaultProxy

CONDUCTORS = ("cond1", "cond2", "cond3")
HOSTS = 6
SCAN_INTERVAL = 3
LEASE = 8
OPTIONS = f"""\
[conductor]
workers = 2
stuck_check_interval = 1
stuck_after = 600
reap_after = 1
reap_interval = 1
reap_scan_interval = {SCAN_INTERVAL}
lease_duration = {LEASE}
"""


class Conductors:
    """The conductor daemons, each in its own process group (to kill it whole)."""

    def __init__(self, workdir: pathlib.Path, common: str) -> None:
        self.workdir = workdir
        self.common = common
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> None:
        config = self.workdir / f"{name}.conf"
        config.write_text(self.common + f"\n[DEFAULT]\nhost = {name}\n")
        log = open(self.workdir / f"{name}.log", "a")  # noqa: SIM115
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "resize_sched.cmd.conductor", "--config-file", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            start_new_session=True,
        )

    def log(self, name: str) -> str:
        return (self.workdir / f"{name}.log").read_text()

    def kill(self, name: str) -> None:
        """SIGKILL the conductor and its workers: no clean stop, the lease stays."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)

    def stop(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                codes[name] = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                codes[name] = None
        return codes


@pytest.fixture
def deployment(tmp_path: pathlib.Path) -> Iterator[dict]:
    mysql = os.environ.get("RESIZE_SCHED_TEST_MYSQL_URL", "").strip()
    scratch = ScratchDatabase(mysql) if mysql else None
    db_url = scratch.create() if scratch else sqlite_url(tmp_path)
    db = Database(db_url)
    db.sync()
    with (
        PlacementHTTP(str(tmp_path / "placement")) as placement,
        FaultProxy(placement.endpoint) as proxy,
    ):
        hosts = [placement.add_host(f"host{i}", 8, 8192, 100) for i in range(HOSTS)]
        common = textwrap.dedent(
            f"""\
            [DEFAULT]
            transport_url = fake://
            [database]
            connection = {db_url}
            [placement]
            auth_type = admin_token
            endpoint = {proxy.endpoint}
            token = admin
            """
        ) + textwrap.dedent(OPTIONS)
        conductors = Conductors(tmp_path, common)
        try:
            for name in CONDUCTORS:
                conductors.start(name)
            yield {
                "db": db,
                "client": placement.client(),
                "proxy": proxy,
                "hosts": hosts,
                "conductors": conductors,
            }
        finally:
            codes = conductors.stop()
            db.dispose()
            if scratch:
                scratch.drop()
    assert all(code == 0 for code in codes.values()), f"not stopped cleanly: {codes}"


def _holder(db: Database) -> str | None:
    lease = db.lease_get(models.LEASE_SWEEP)
    return lease.holder if lease is not None else None


def _late_claim(db: Database, client, host: str) -> str:
    """A server deleted now whose claim lands in Placement just after the delete."""
    flavor = {"id": "1", "name": "small", "vcpus": 1, "memory_mb": 512, "root_gb": 1}
    server = db.server_create(name="late", project_id="p", user_id="u", flavor=flavor)
    db.server_delete(server.uuid)
    write = ConsumerWrite({host: {"VCPU": 1, "MEMORY_MB": 512}}, "p", "u", None, INSTANCE)
    client.put_allocations(server.uuid, write)
    return server.uuid


def _requests(proxy: FaultProxy, method: str, fragment: str) -> int:
    return sum(1 for seen in list(proxy.log) if seen.method == method and fragment in seen.path)


# NOTE: three daemons with two workers each for several lease intervals (about
# 45 s): in the slow suite ('tox -e faults'), which CI runs.
@pytest.mark.slow
def test_one_sweep_per_deployment_and_the_lease_moves_when_its_holder_dies(deployment):
    db, client, proxy = deployment["db"], deployment["client"], deployment["proxy"]
    conductors, hosts = deployment["conductors"], deployment["hosts"]
    wait_for(lambda: _holder(db) in CONDUCTORS, "a conductor to take the sweep's lease")
    holder = _holder(db)
    # Each daemon's first worker runs a sweep loop: three of them contend.
    wait_for(
        lambda: all("Conductor on" in conductors.log(name) for name in CONDUCTORS),
        "every conductor to start",
        timeout=120,
    )

    # A late claim of a deleted server is read once and given back once.
    leaked = _late_claim(db, client, hosts[0])
    wait_for(lambda: client.get_allocations(leaked).allocations == {}, "the reaper", timeout=30)
    time.sleep(SCAN_INTERVAL)  # more passes, which must not read it again
    assert _requests(proxy, "GET", f"/allocations/{leaked}") == 1
    assert _requests(proxy, "PUT", f"/allocations/{leaked}") == 1
    assert [e.phase for e in db.server_journal_list(leaked)] == ["reap"]

    # Over four scan intervals, the provider reads of at most five scans
    # (three uncoordinated conductors would make about twelve).
    scans_before = _requests(proxy, "GET", f"/resource_providers/{hosts[-1]}/allocations")
    started = time.monotonic()
    time.sleep(4 * SCAN_INTERVAL)
    window = time.monotonic() - started
    scans = _requests(proxy, "GET", f"/resource_providers/{hosts[-1]}/allocations") - scans_before
    assert 1 <= scans <= window / SCAN_INTERVAL + 1, scans
    # Only the holder swept: no other conductor logged a reaper pass.
    assert _holder(db) == holder
    for name in CONDUCTORS:
        if name != holder:
            assert "Reaper pass" not in conductors.log(name), name
    assert "Reaper pass" in conductors.log(holder)

    # Kill the holder outright: its lease expires and a survivor takes it on.
    conductors.kill(holder)
    killed_at = time.monotonic()
    wait_for(
        lambda: _holder(db) not in (holder, None),
        "a survivor to take the lease over",
        timeout=LEASE + 30,
    )
    assert time.monotonic() - killed_at >= LEASE - 1  # it waited for the expiry
    successor = _holder(db)
    leaked = _late_claim(db, client, hosts[1])
    wait_for(lambda: client.get_allocations(leaked).allocations == {}, "the new holder's reaper")
    assert "Reaper pass" in conductors.log(successor)
    assert _requests(proxy, "GET", f"/allocations/{leaked}") == 1
