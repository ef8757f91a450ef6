"""openstackclient, unchanged, against the all-in-one through its clouds.yaml.

osc-placement's ``openstack resource provider list`` and ``resource provider
usage show`` run as subprocesses with only ``OS_CLIENT_CONFIG_FILE`` and
``OS_CLOUD`` set, as the all-in-one prints them: the password log-in at the
identity stand-in, whose catalog leads to Placement. The clouds' log-ins and
the ``imageRef`` check through ``[glance]`` are tested here with openstacksdk
(quick); the whole CLI story is in test_cli_commands.py (slow).

:func:`test_what_operators_scripts_run` runs the commands operators' scripts
run against Nova (hypervisor statistics, services under Nova's names, usage,
a server's launch time and zone) through the real ``openstack`` and ``nova``.
"""

import os
import pathlib
import subprocess
from typing import Any

import openstack.config
import pytest
from keystoneauth1 import exceptions as ks_exc

from resize_sched.all_in_one.images import DEFAULT_IMAGES
from tests.functional.fixtures import openstack_cli
from tests.functional.fixtures.openstack_cli import run_json


def _env(d) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("OS_AUTH_URL", None)
    for line in d.aio.export_lines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    return env


def _run(d, *args: str) -> Any:
    return run_json(args, _env(d))


def _run_plain(d, *args: str) -> str:
    """``openstack ARGS`` for a command with no output format (``service set``)."""
    done = subprocess.run(
        [openstack_cli.openstack(), *args],
        env=_env(d),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _nova_table(d, *args: str) -> dict[str, str]:
    """``nova ARGS`` with the admin openrc's variables; its two-column table as a dict."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    for line in pathlib.Path(d.aio.openrc[d.aio.ADMIN_CLOUD]).read_text().splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = value.strip("'")
    nova = pathlib.Path(openstack_cli.openstack()).with_name("nova")
    done = subprocess.run(
        [str(nova), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2:
            rows[cells[0]] = cells[1]
    return rows


def test_resource_provider_list_and_usage_show(deploy):
    d = deploy()
    assert pathlib.Path(d.aio.clouds_yaml).is_file()
    providers = _run(d, "resource", "provider", "list")
    assert sorted(p["name"] for p in providers) == ["host1", "host2"]
    flavor = d.flavor("small", vcpus=2, ram=1024, disk=10)
    server = d.boot("vm", flavor)
    host = server.compute_host
    usage = _run(d, "resource", "provider", "usage", "show", d.hosts[host])
    assert {u["resource_class"]: u["usage"] for u in usage} == {
        "VCPU": 2,
        "MEMORY_MB": 1024,
        "DISK_GB": 10,
    }
    other = "host2" if host == "host1" else "host1"
    usage = _run(d, "resource", "provider", "usage", "show", d.hosts[other])
    assert all(u["usage"] == 0 for u in usage)


def _password_session(d, cloud: str) -> Any:
    """A keystoneauth session logged in through the clouds.yaml the all-in-one wrote."""
    config = openstack.config.OpenStackConfig(config_files=[d.aio.clouds_yaml], load_envvars=False)
    return config.get_one(cloud=cloud).get_session()


def test_password_clouds_log_in_and_find_every_service(deploy):
    d = deploy()
    admin = _password_session(d, d.aio.ADMIN_CLOUD)
    assert admin.get_token() == "admin:admin"
    endpoints = {
        service: admin.get_endpoint(service_type=service, interface="public")
        for service in ("compute", "placement", "image", "identity")
    }
    assert endpoints == {
        "compute": d.aio.api_endpoint,
        "placement": d.aio.placement.endpoint,
        "image": d.aio.image_endpoint,
        "identity": d.aio.identity_endpoint,
    }
    member = _password_session(d, d.aio.MEMBER_CLOUD)
    assert member.get_token() == "demo:demo"
    # The member token is a member's at the Compute API: no flavor creation.
    refused = member.post(
        f"{d.aio.api_endpoint}/flavors",
        json={"flavor": {"name": "x", "ram": 1, "vcpus": 1, "disk": 1}},
        raise_exc=False,
    )
    assert refused.status_code == 403
    # A wrong password is refused by the stand-in.
    config = openstack.config.OpenStackConfig(config_files=[d.aio.clouds_yaml], load_envvars=False)
    region = config.get_one(cloud=d.aio.ADMIN_CLOUD, auth={"password": "wrong"})
    with pytest.raises(ks_exc.Unauthorized):
        region.get_session().get_token()


def test_image_ref_is_checked_against_the_image_service(deploy):
    d = deploy()
    cirros = next(i for i in DEFAULT_IMAGES if i.name == "cirros")
    ubuntu = next(i for i in DEFAULT_IMAGES if i.name == "ubuntu-24.04")
    small = d.flavor("small", vcpus=1, ram=512, disk=5)
    compute = d.conn.compute

    server = compute.create_server(name="vm", flavor_id=small.id, image_id=cirros.id)
    server = compute.wait_for_server(server, status="ACTIVE", wait=30, interval=0.05)
    body = compute.get(f"/servers/{server.id}").json()["server"]
    assert body["image"]["id"] == cirros.id
    assert body["image"]["links"][0]["href"].endswith(f"/images/{cirros.id}")
    # Without an image, Nova's "".
    bare = d.boot("bare", small)
    assert compute.get(f"/servers/{bare.id}").json()["server"]["image"] == ""

    def create(**server: Any) -> Any:
        body = {"server": {"name": "x", "flavorRef": small.id, **server}}
        return compute.post("/servers", json=body, raise_exc=False)

    unknown = create(imageRef="00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 400
    assert "Can not find requested image" in unknown.json()["badRequest"]["message"]
    too_small = create(imageRef=ubuntu.id)
    assert too_small.status_code == 400
    assert "memory is too small" in too_small.json()["badRequest"]["message"]
    big_ram = d.flavor("big-ram", vcpus=1, ram=2048, disk=5)
    small_disk = create(imageRef=ubuntu.id, flavorRef=big_ram.id)
    assert small_disk.status_code == 400
    assert "needs at least 10 GiB" in small_disk.json()["badRequest"]["message"]
    volume = create(
        imageRef=cirros.id,
        block_device_mapping_v2=[
            {"uuid": cirros.id, "source_type": "image", "destination_type": "volume",
             "volume_size": 1, "boot_index": 0}
        ],
    )  # fmt: skip
    assert volume.status_code == 400
    assert "no volumes" in volume.json()["badRequest"]["message"]
    # Nothing was recorded for the refused creates.
    assert sorted(s.name for s in compute.servers()) == ["bare", "vm"]
    d.check()


def test_what_operators_scripts_run(deploy):
    d = deploy()
    flavor = d.flavor("small", vcpus=2, ram=1024, disk=10)
    server = d.boot("vm", flavor)

    # -- a server's launch time and zone --------------------------------------------------
    shown = _run(d, "server", "show", "vm")
    assert shown["OS-SRV-USG:launched_at"] is not None
    assert shown["OS-SRV-USG:terminated_at"] is None
    assert shown["OS-EXT-AZ:availability_zone"] == "nova"

    # -- hypervisor statistics (8 VCPU, 16384 MB, 200 GB per host) ------------------------
    stats = _run(d, "hypervisor", "stats", "show")
    assert (stats["count"], stats["vcpus"], stats["vcpus_used"], stats["running_vms"]) == (
        2,
        16,
        2,
        1,
    )
    assert (stats["memory_mb"], stats["memory_mb_used"], stats["local_gb_used"]) == (
        32768,
        1024,
        10,
    )
    nova_stats = _nova_table(d, "hypervisor-stats")
    assert (nova_stats["count"], nova_stats["vcpus_used"], nova_stats["free_disk_gb"]) == (
        "2",
        "2",
        "390",
    )

    # -- services under Nova's names, the conductor's own row ----------------------------
    services = _run(d, "compute", "service", "list")
    listed = sorted((s["Binary"], s["Host"], s["Zone"], s["State"]) for s in services)
    assert listed == [
        ("nova-compute", "host1", "nova", "up"),
        ("nova-compute", "host2", "nova", "up"),
        ("nova-conductor", d.aio.conf.host, "internal", "up"),
    ]
    other = "host2" if server.compute_host == "host1" else "host1"
    _run_plain(d, "compute", "service", "set", "--disable", other, "nova-compute")
    assert d.aio.db.service_get_by_host(other).disabled
    _run_plain(d, "compute", "service", "set", "--enable", other, "nova-compute")
    assert not d.aio.db.service_get_by_host(other).disabled

    # -- usage -----------------------------------------------------------------------------
    usages = _run(d, "usage", "list")
    assert [u["Project"] for u in usages] == ["admin"]
    assert [s["instance_id"] for s in usages[0]["Servers"]] == [server.id]
    # 2 vCPUs and 1024 MB for the hours the server ran (up to now).
    hours = usages[0]["Servers"][0]["hours"]
    assert hours > 0
    assert usages[0]["CPU Hours"] == pytest.approx(2 * hours)
    usage = _run(d, "usage", "show", "--project", "admin")
    assert [s["name"] for s in usage["Servers"]] == ["vm"]
    assert usage["CPU Hours"] >= usages[0]["CPU Hours"]
    assert usage["RAM MB-Hours"] == pytest.approx(512 * usage["CPU Hours"])
    d.check()
