"""The operators' own CLIs, unchanged, against the all-in-one.

The real ``openstack`` (python-openstackclient) and ``nova``
(python-novaclient) run as subprocesses. ``openstack`` gets only
``OS_CLIENT_CONFIG_FILE`` and ``OS_CLOUD`` as the all-in-one prints them, and
logs in with a password at the all-in-one's Keystone stand-in, whose catalog
leads it to the Compute API, Placement and the Image API stand-in. ``nova``
reads no clouds.yaml: it gets the variables of the openrc file the
all-in-one writes beside it. Every ``openstack`` command is asserted on its
``-f json`` output.

:func:`test_servers_flavors_and_images_from_the_clis` walks what the Compute
API, Placement and the image stand-in serve; :func:`test_actions_hosts_and_
services_from_the_clis` the operator views (instance actions, server
migrations, hypervisors, services). Each takes 20-60 s of CLI start-ups and
``--wait`` polls: ``slow``.
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from typing import Any

import pytest

from resize_sched.cmd import host_holders
from resize_sched.placement.client import owner_trait

pytestmark = pytest.mark.slow

HOSTS = "host1:8:16384:200,host2:4:8192:40"


def _tool(name: str) -> str:
    beside = pathlib.Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]' brings it)")
    return found


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OS_")}


def _openstack_env(d: Any, cloud: str | None) -> dict[str, str]:
    env = _clean_env()
    for line in d.aio.export_lines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    assert set(env) - set(_clean_env()) == {"OS_CLIENT_CONFIG_FILE", "OS_CLOUD"}
    if cloud is not None:
        env["OS_CLOUD"] = cloud
    return env


def _run(d: Any, *args: str, cloud: str | None = None, ok: bool = True) -> Any:
    """``openstack ARGS -f json``; its parsed output, or the failure when ``ok`` is False."""
    done = subprocess.run(
        [_tool("openstack"), *args, "-f", "json"],
        env=_openstack_env(d, cloud),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if not ok:
        assert done.returncode != 0, done.stdout
        return done
    assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout) if done.stdout.strip() else None


def _run_plain(d: Any, *args: str, cloud: str | None = None) -> str:
    """``openstack ARGS`` for commands with no output format (resize confirm, delete)."""
    done = subprocess.run(
        [_tool("openstack"), *args],
        env=_openstack_env(d, cloud),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
    return done.stdout


def _nova(d: Any, *args: str) -> str:
    env = _clean_env()
    for line in pathlib.Path(d.aio.openrc[d.aio.ADMIN_CLOUD]).read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value.strip("'")
    done = subprocess.run(
        [_tool("nova"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"nova {' '.join(args)}: {done.stderr}"
    return done.stdout


def _table(text: str) -> dict[str, str]:
    """``nova show``'s two-column table as a dict."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def _image_id(d: Any, name: str) -> str:
    images = _run(d, "image", "list", "--name", name)
    assert len(images) == 1, images
    return images[0]["ID"]


def test_servers_flavors_and_images_from_the_clis(deploy):
    d = deploy(hosts=HOSTS)
    # -- flavors -----------------------------------------------------------------------
    small = _run(d, "flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "5", "small")
    assert (small["name"], small["vcpus"], small["ram"], small["disk"]) == ("small", 1, 512, 5)
    _run(d, "flavor", "create", "--vcpus", "2", "--ram", "1024", "--disk", "10", "medium")
    _run(d, "flavor", "create", "--vcpus", "16", "--ram", "1024", "--disk", "10", "huge")
    _run_plain(d, "flavor", "set", "--property", "hw:cpu_policy=shared", "small")
    shown = _run(d, "flavor", "show", "small")
    assert shown["properties"] == {"hw:cpu_policy": "shared"}
    assert shown["id"] == small["id"]
    listed = _run(d, "flavor", "list")
    assert sorted(f["Name"] for f in listed) == ["huge", "medium", "small"]

    # -- images ------------------------------------------------------------------------
    images = _run(d, "image", "list")
    assert {"cirros", "ubuntu-24.04"} <= {i["Name"] for i in images}
    assert all(i["Status"] == "active" for i in images)
    cirros = _image_id(d, "cirros")

    # -- create, list, show ----------------------------------------------------------
    server = _run(d, "server", "create", "--image", "cirros", "--flavor", "small", "--wait", "vm1")
    assert server["status"] == "ACTIVE"
    assert cirros in server["image"]
    assert server["flavor"]["original_name"] == "small"
    long = _run(d, "server", "list", "--long")
    assert [
        (s["Name"], s["Status"], s["Image Name"], s["Image ID"], s["Flavor"]) for s in long
    ] == [("vm1", "ACTIVE", "cirros", cirros, "small")]
    assert long[0]["Host"] in ("host1", "host2")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["id"], shown["status"], shown["project_id"]) == (server["id"], "ACTIVE", "admin")
    assert shown["OS-EXT-SRV-ATTR:host"] == long[0]["Host"]
    d.check()

    # -- images the flavor cannot boot, boot from volume -----------------------------
    refused = _run(
        d, "server", "create", "--image", "ubuntu-24.04", "--flavor", "small", "x", ok=False
    )
    assert "memory is too small" in refused.stderr
    refused = _run(
        d,
        "server",
        "create",
        "--flavor",
        "small",
        "--block-device",
        f"uuid={cirros},source_type=image,destination_type=volume,volume_size=1,boot_index=0",
        "x",
        ok=False,
    )
    assert "no volumes" in refused.stderr
    assert [s["Name"] for s in _run(d, "server", "list")] == ["vm1"]

    # -- resize, confirm --------------------------------------------------------------
    _run_plain(d, "server", "resize", "--flavor", "medium", "--wait", "vm1")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["status"], shown["flavor"]["original_name"]) == ("VERIFY_RESIZE", "medium")
    _run_plain(d, "server", "resize", "confirm", "vm1")
    d.wait(d.conn.compute.get_server(server["id"]), "ACTIVE")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["status"], shown["flavor"]["original_name"]) == ("ACTIVE", "medium")
    d.check()

    # -- resize, revert ---------------------------------------------------------------
    _run_plain(d, "server", "resize", "--flavor", "small", "--wait", "vm1")
    assert _run(d, "server", "show", "vm1")["status"] == "VERIFY_RESIZE"
    _run_plain(d, "server", "resize", "revert", "vm1")
    d.wait(d.conn.compute.get_server(server["id"]), "ACTIVE")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["status"], shown["flavor"]["original_name"]) == ("ACTIVE", "medium")
    d.check()

    # -- a resize that cannot fit anywhere (16 VCPU; the hosts have 8 and 4) ----------
    _run_plain(d, "server", "resize", "--flavor", "huge", "--wait", "vm1")
    d.wait(d.conn.compute.get_server(server["id"]), "ACTIVE")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["status"], shown["flavor"]["original_name"]) == ("ACTIVE", "medium")
    migrations = _run(d, "server", "migration", "list", "--server", "vm1")
    assert [m["Status"] for m in migrations] == ["error", "reverted", "confirmed"]
    assert all(m["Server UUID"] == server["id"] for m in migrations)
    d.check()

    # -- a member's own view ------------------------------------------------------------
    member = d.aio.MEMBER_CLOUD
    mine = _run(
        d, "server", "create", "--image", "cirros", "--flavor", "small", "--wait", "m1",
        cloud=member,
    )  # fmt: skip
    assert (mine["status"], mine["project_id"]) == ("ACTIVE", "demo")
    assert [s["Name"] for s in _run(d, "server", "list", cloud=member)] == ["m1"]
    assert _run(d, "image", "list", "--name", "cirros", cloud=member)[0]["ID"] == cirros
    denied = _run(d, "flavor", "create", "--vcpus", "1", "--ram", "1", "--disk", "1", "no",
                  cloud=member, ok=False)  # fmt: skip
    assert "403" in denied.stderr

    # -- nova --------------------------------------------------------------------------
    booted = _table(_nova(d, "boot", "--image", "cirros", "--flavor", "small", "--poll", "vm2"))
    assert booted["name"] == "vm2"
    listed_text = _nova(d, "list")
    assert re.search(r"\|\s*vm2\s*\|\s*ACTIVE\s*\|", listed_text), listed_text
    assert re.search(r"\|\s*vm1\s*\|\s*ACTIVE\s*\|", listed_text), listed_text
    shown_nova = _table(_nova(d, "show", "vm2"))
    assert shown_nova["status"] == "ACTIVE"
    assert shown_nova["image"] == f"cirros ({cirros})"
    assert shown_nova["flavor:original_name"] == "small"
    d.check()

    # -- delete ------------------------------------------------------------------------
    _run_plain(d, "server", "delete", "--wait", "vm1", "vm2")
    _run_plain(d, "server", "delete", "--wait", "m1", cloud=member)
    assert _run(d, "server", "list", "--all-projects") == []
    assert all(u == 0 for u in d.usage("host1").values())
    assert all(u == 0 for u in d.usage("host2").values())
    d.check()


def test_actions_hosts_and_services_from_the_clis(deploy):
    """The operator views other parts of issue 10 add: events, migrations, hosts."""
    d = deploy(hosts=HOSTS)
    _run(d, "flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "5", "small")
    _run(d, "flavor", "create", "--vcpus", "2", "--ram", "1024", "--disk", "10", "medium")
    _run(d, "flavor", "create", "--vcpus", "16", "--ram", "1024", "--disk", "10", "huge")
    server = _run(d, "server", "create", "--image", "cirros", "--flavor", "small", "--wait", "vm1")
    host = server["OS-EXT-SRV-ATTR:host"]

    # -- a resize that cannot fit leaves an Error event ---------------------------------
    _run_plain(d, "server", "resize", "--flavor", "huge", "--wait", "vm1")
    d.wait(d.conn.compute.get_server(server["id"]), "ACTIVE")
    actions = _run(d, "server", "event", "list", "--long", "vm1")
    assert [a["Action"] for a in actions] == ["resize", "create"]
    assert all(a["Server ID"] == server["id"] for a in actions)
    resize = _run(d, "server", "event", "show", "vm1", actions[0]["Request ID"])
    assert resize["action"] == "resize"
    errors = [e for e in resize["events"] if e["result"] == "Error"]
    assert errors, resize
    assert re.search(r"infeasible|deferred", json.dumps(resize), re.IGNORECASE), resize
    create = _run(d, "server", "event", "show", "vm1", actions[1]["Request ID"])
    assert create["action"] == "create"
    assert create["events"] and all(e["result"] == "Success" for e in create["events"])

    # -- an in-progress resize: server migration list/show -----------------------------
    _run_plain(d, "server", "resize", "--flavor", "medium", "--wait", "vm1")
    migrations = _run(d, "server", "migration", "list", "--server", "vm1")
    current = next(m for m in migrations if m["Status"] == "finished")
    # NOTE: by UUID: openstackclient 10.5 swaps server and migration in its
    # request when given the numeric id (GET /servers/ID/migrations/SERVER).
    migration = _run(d, "server", "migration", "show", "vm1", current["UUID"])
    assert (migration["Server UUID"], migration["Status"]) == (server["id"], "finished")
    assert (migration["ID"], migration["Dest Compute"]) == (current["Id"], current["Dest Compute"])
    _run_plain(d, "server", "resize", "confirm", "vm1")
    d.wait(d.conn.compute.get_server(server["id"]), "ACTIVE")
    host = _run(d, "server", "show", "vm1")["OS-EXT-SRV-ATTR:host"]

    # -- hypervisors ---------------------------------------------------------------------
    hypervisors = _run(d, "hypervisor", "list")
    assert sorted(h["Hypervisor Hostname"] for h in hypervisors) == ["host1", "host2"]
    assert all(h["State"] == "up" for h in hypervisors)
    shown = _run(d, "hypervisor", "show", host)
    assert shown["hypervisor_hostname"] == host
    assert (shown["vcpus"], shown["vcpus_used"]) == ({"host1": 8, "host2": 4}[host], 2)
    assert shown["memory_mb_used"] == 1024

    # -- services, disable and enable ------------------------------------------------------
    computes = [s for s in _run(d, "compute", "service", "list") if s["Host"] in d.hosts]
    assert sorted((s["Host"], s["Status"], s["State"]) for s in computes) == [
        ("host1", "enabled", "up"),
        ("host2", "enabled", "up"),
    ]
    (binary,) = {s["Binary"] for s in computes}
    only = _run(d, "compute", "service", "list", "--service", binary)
    assert sorted(s["Host"] for s in only) == ["host1", "host2"]
    _run_plain(
        d, "compute", "service", "set", "--disable", "--disable-reason", "maintenance",
        "host2", binary,
    )  # fmt: skip
    services = {s["Host"]: s for s in _run(d, "compute", "service", "list", "--long")}
    assert services["host2"]["Status"] == "disabled"
    assert services["host2"]["Disabled Reason"] == "maintenance"
    assert services["host1"]["Status"] == "enabled"
    traits = _run(d, "--os-placement-api-version", "1.6", "resource", "provider", "trait", "list",
                  d.hosts["host2"])  # fmt: skip
    assert "COMPUTE_STATUS_DISABLED" in {t["name"] for t in traits}
    _run_plain(d, "compute", "service", "set", "--enable", "host2", binary)
    services = {s["Host"]: s for s in _run(d, "compute", "service", "list")}
    assert services["host2"]["Status"] == "enabled"
    traits = _run(d, "--os-placement-api-version", "1.6", "resource", "provider", "trait", "list",
                  d.hosts["host2"])  # fmt: skip
    assert "COMPUTE_STATUS_DISABLED" not in {t["name"] for t in traits}

    # -- delete -----------------------------------------------------------------------------
    _run_plain(d, "server", "delete", "--wait", "vm1")
    assert _run(d, "server", "list") == []
    d.check()


def test_draining_a_host_with_the_clis(deploy):
    """The operator guide's drain: disable the host, ``openstack server migrate
    --wait`` and ``server migration confirm`` / ``revert``, a named host at
    2.56, ``nova host-servers-migrate``, then ``host holders`` says it is empty."""
    d = deploy(hosts="host1:8:16384:200,host2:8:16384:200")
    _run(d, "flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "5", "small")
    for name in ("vm1", "vm2"):
        _run(d, "server", "create", "--image", "cirros", "--flavor", "small", "--wait", name)
    hosts = {_run(d, "server", "show", n)["OS-EXT-SRV-ATTR:host"] for n in ("vm1", "vm2")}
    # NOTE: both on one host, or one each: drain the one vm1 is on.
    source = _run(d, "server", "show", "vm1")["OS-EXT-SRV-ATTR:host"]
    other = "host2" if source == "host1" else "host1"
    _run_plain(d, "compute", "service", "set", "--disable", source, "nova-compute")

    _run_plain(d, "server", "migrate", "--wait", "vm1")
    shown = _run(d, "server", "show", "vm1")
    assert (shown["status"], shown["OS-EXT-SRV-ATTR:host"]) == ("VERIFY_RESIZE", other)
    _run_plain(d, "server", "migration", "revert", "vm1")
    d.wait(d.conn.compute.find_server("vm1"), "ACTIVE")
    assert _run(d, "server", "show", "vm1")["OS-EXT-SRV-ATTR:host"] == source
    _run_plain(
        d,
        "--os-compute-api-version",
        "2.56",
        "server",
        "migrate",
        "--host",
        other,
        "--wait",
        "vm1",
    )
    _run_plain(d, "server", "migration", "confirm", "vm1")
    d.wait(d.conn.compute.find_server("vm1"), "ACTIVE")
    assert _run(d, "server", "show", "vm1")["OS-EXT-SRV-ATTR:host"] == other

    if source in hosts and _run(d, "server", "show", "vm2")["OS-EXT-SRV-ATTR:host"] == source:
        out = _nova(d, "host-servers-migrate", source)
        assert "True" in out, out
        vm2 = d.wait(d.conn.compute.find_server("vm2"), "VERIFY_RESIZE")
        d.conn.compute.confirm_server_resize(vm2)
        d.wait(vm2, "ACTIVE")
    d.check()
    assert d.usage(source) == {}
    owner = owner_trait(d.aio.conf.placement.deployment_name)
    report = host_holders.holders(d.aio.db, d.placement, owner, source)
    assert report.empty, list(report.lines())
    _run_plain(d, "compute", "service", "set", "--enable", source, "nova-compute")
