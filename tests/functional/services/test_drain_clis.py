"""Draining a host with the operators' own CLIs against the all-in-one:
``openstack compute service set --disable``, ``openstack server migrate
--live-migration [--host] --wait``, ``openstack server migration
list/show``, ``nova host-evacuate-live`` and, once the host is forced down,
``nova host-evacuate``. Each command's effect is asserted on the server
and on Placement. CLI start-ups take seconds each: ``slow``.
"""

import time
from typing import Any

import pytest

from tests.functional.services.test_cli_commands import _nova, _run, _run_plain

pytestmark = pytest.mark.slow

HOSTS = "host1:8:16384:200,host2:8:16384:200"


def _host(d: Any, name: str) -> str:
    return str(_run(d, "server", "show", name)["OS-EXT-SRV-ATTR:host"])


def test_a_host_drained_live_then_evacuated(deploy: Any) -> None:
    d = deploy(hosts=HOSTS)
    _run(d, "flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "5", "small")
    for name in ("vm1", "vm2"):
        _run(d, "server", "create", "--image", "cirros", "--flavor", "small", "--wait", name)
    # Both on one host: the other disabled while they boot.
    first = _host(d, "vm1")
    other = "host2" if first == "host1" else "host1"
    if _host(d, "vm2") != first:
        _run_plain(d, "compute", "service", "set", "--disable", other, "nova-compute")
        _run_plain(d, "server", "migrate", "--live-migration", "--host", first, "--wait", "vm2")
        _run_plain(d, "compute", "service", "set", "--enable", other, "nova-compute")
    assert _host(d, "vm2") == first

    # -- drain: disable the host, move one server by name, the rest by host ----------------
    _run_plain(d, "compute", "service", "set", "--disable", first, "nova-compute")
    _run_plain(
        d,
        "--os-compute-api-version",
        "2.30",
        "server",
        "migrate",
        "--live-migration",
        "--host",
        other,
        "--wait",
        "vm1",
    )
    assert _host(d, "vm1") == other
    assert _run(d, "server", "show", "vm1")["status"] == "ACTIVE"
    listed = _run(
        d, "--os-compute-api-version", "2.23", "server", "migration", "list", "--server", "vm1"
    )
    (live,) = [m for m in listed if m.get("Type") == "live-migration"]
    assert (live["Status"], live["Source Compute"], live["Dest Compute"]) == (
        "completed",
        first,
        other,
    )
    _nova(d, "host-evacuate-live", first)
    d.wait(d.conn.compute.find_server("vm2"), "ACTIVE")
    assert _host(d, "vm2") == other
    assert d.usage(first) == {}
    d.check()

    # -- the other host dies: forced down, its servers evacuated back ----------------------
    _run_plain(d, "compute", "service", "set", "--enable", first, "nova-compute")
    _run_plain(
        d,
        "--os-compute-api-version",
        "2.11",
        "compute",
        "service",
        "set",
        "--down",
        other,
        "nova-compute",
    )
    _nova(d, "host-evacuate", other)
    for name in ("vm1", "vm2"):
        d.wait(d.conn.compute.find_server(name), "ACTIVE")
        assert _host(d, name) == first
    # NOTE: the forced-down host's compute still runs in the all-in-one and
    # reports every [DEFAULT] report_interval: a report is the host coming
    # back, so its copies go and the room they held there is given back
    # (while the host is really stopped it keeps that room: test_rabbit_moves).
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        evacuations = [m for m in d.conn.compute.migrations() if m.migration_type == "evacuation"]
        if sorted(m.status for m in evacuations) == ["completed", "completed"]:
            break
        time.sleep(0.5)
    assert sorted(m.status for m in evacuations) == ["completed", "completed"]
    assert d.usage(other) == {}
    assert d.usage(first) == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
    d.check()
