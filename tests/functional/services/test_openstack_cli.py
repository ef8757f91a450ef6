"""openstackclient, unchanged, against the all-in-one through its clouds.yaml.

osc-placement's ``openstack resource provider list`` and ``resource provider
usage show`` run as subprocesses with only ``OS_CLIENT_CONFIG_FILE`` and
``OS_CLOUD`` set, as the all-in-one prints them.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest


def _openstack() -> str:
    beside = pathlib.Path(sys.executable).parent / "openstack"
    found = str(beside) if beside.exists() else shutil.which("openstack")
    if found is None:
        pytest.skip("openstackclient is not installed (pip install '.[test]' brings it)")
    return found


def _run(d, *args: str) -> object:
    env = dict(os.environ)
    env.pop("OS_AUTH_URL", None)
    for line in d.aio.export_lines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    done = subprocess.run(
        [_openstack(), *args, "-f", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


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
