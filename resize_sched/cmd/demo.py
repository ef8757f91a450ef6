"""``resize-sched-demo``: Nova bug 1790204 replayed with every claim strategy.

Starts the all-in-one (real Placement, API, conductor, fake compute hosts) on
a temporary directory with three full hosts, each the size of the bug's host
(2 VCPU, 8192 MB, 1028 GB), and one server per host whose flavor takes the
whole disk. Each server is then resized to a flavor with more VCPU and memory
but the same disk, once per strategy, through the Compute API, and the demo
prints what Placement holds at every step.
"""

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from typing import Any

import requests
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import resources as rs

LOG = logging.getLogger(__name__)

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
HOST = "2:8192:1028"
OLD = {"name": "bug-old", "vcpus": 1, "ram": 1024, "disk": 1028}
NEW = {"name": "bug-new", "vcpus": 2, "ram": 2048, "disk": 1028}


class Api:
    """The Compute API as an admin client sees it."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.session = requests.Session()
        self.session.headers.update({"X-Auth-Token": "admin:admin"})

    def call(self, method: str, path: str, body: Any = None) -> Any:
        response = self.session.request(method, self.endpoint + path, json=body, timeout=30)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def wait(self, server_id: str, done: Sequence[str], timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            server = self.call("GET", f"/servers/{server_id}")["server"]
            if server["status"] in done and server["OS-EXT-STS:task_state"] is None:
                return server
            if time.monotonic() > deadline:
                raise RuntimeError(f"server {server_id} stuck in {server['status']}")
            time.sleep(0.05)

    def migration(self, server_id: str) -> dict:
        migrations = self.call("GET", f"/os-migrations?instance_uuid={server_id}")["migrations"]
        return max(migrations, key=lambda m: m["id"])


def _usage(aio: Any, host: str) -> str:
    client = aio.conductor.client
    rp = client.list_resource_providers(name=host)[0]["uuid"]
    used = client.get_usages(rp)
    return rs.format_resources(used) or "nothing"


def run(aio: Any) -> list[tuple[str, str, str, str]]:
    api = Api(aio.api_endpoint)
    flavors = {}
    for spec in (OLD, NEW):
        flavors[spec["name"]] = api.call("POST", "/flavors", {"flavor": spec})["flavor"]["id"]
    # Fill every host first: one full-disk server each.
    servers = {}
    for strategy in STRATEGIES:
        body = {"server": {"name": f"vm-{strategy}", "flavorRef": flavors["bug-old"]}}
        servers[strategy] = api.call("POST", "/servers", body)["server"]["id"]
    rows = []
    for index, strategy in enumerate(STRATEGIES):
        server = api.wait(servers[strategy], ("ACTIVE", "ERROR"))
        host = server["OS-EXT-SRV-ATTR:host"]
        before = f"server ACTIVE on {host}, which holds {_usage(aio, host)}"
        # NOTE: the all-in-one's API and conductor share this configuration,
        # as a SIGHUP after editing the file would make them share it.
        aio.conf.set_override("claim_strategy", strategy, group="resize")
        aio.conductor.client.reset_request_count()
        resize = {"resize": {"flavorRef": flavors["bug-new"]}}
        api.call("POST", f"/servers/{server['id']}/action", resize)
        server = api.wait(server["id"], ("VERIFY_RESIZE", "ACTIVE", "ERROR"))
        requests_made = aio.conductor.client.request_count
        migration = api.migration(server["id"])
        if server["status"] != "VERIFY_RESIZE":
            reason = migration.get("resize_sched:error_reason") or migration["status"]
            kind = migration.get("resize_sched:error_kind") or "error"
            rows.append(
                (
                    strategy,
                    before,
                    f"NoValidHost ({kind}): {reason}; {requests_made} Placement requests",
                    f"server {server['status']}, {host} holds {_usage(aio, host)}",
                )
            )
            continue
        dest = server["OS-EXT-SRV-ATTR:host"]
        during = (
            f"VERIFY_RESIZE on {dest} ({'same' if dest == host else 'other'} host), "
            f"{dest} holds {_usage(aio, dest)}; {requests_made} Placement requests"
        )
        decision = "confirmResize" if index % 2 == 0 else "revertResize"
        api.call("POST", f"/servers/{server['id']}/action", {decision: None})
        api.wait(server["id"], ("ACTIVE", "ERROR"))
        rows.append((strategy, before, during, f"{decision}: {host} holds {_usage(aio, host)}"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="resize-sched-demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--verbose", action="store_true", help="show the services' logs")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[], prog="resize-sched-demo")
    conf.set_override("debug", False)
    if not args.verbose:
        # NOTE: keep the screen for the table; the services log to a file.
        handle, log_file = tempfile.mkstemp(prefix="resize-sched-demo-", suffix=".log")
        os.close(handle)
        conf.set_override("log_file", log_file)
        conf.set_override("use_stderr", False)
        print(f"Service logs: {log_file}")
    logging.setup(conf, "resize_sched")
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("bind_host", "127.0.0.1", group="api")
    conf.set_override("bind_port", 0, group="api")
    conf.set_override("placement_port", 0, group="all_in_one")
    conf.set_override("hosts", [f"host{i + 1}:{HOST}" for i in range(3)], group="all_in_one")

    # NOTE: a third-party import chain warns about eventlet, which we do not use.
    warnings.filterwarnings("ignore", message=r"(?s)\s*eventlet")
    from resize_sched.all_in_one import AllInOne

    print("Starting the all-in-one: Placement (SQLite), API, conductor, 3 compute hosts...")
    aio = AllInOne(conf)
    aio.start()
    try:
        print(f"Compute API {aio.api_endpoint}, Placement {aio.placement.endpoint}\n")
        print(
            f"Each host: VCPU 2, MEMORY_MB 8192, DISK_GB 1028. Server flavor "
            f"{OLD['vcpus']} VCPU / {OLD['ram']} MB / {OLD['disk']} GB, resized to "
            f"{NEW['vcpus']} VCPU / {NEW['ram']} MB / {NEW['disk']} GB; the other hosts "
            "are full, so only a same-host resize can succeed.\n"
        )
        rows = run(aio)
    finally:
        aio.stop()
    for strategy, before, resize, then in rows:
        print(f"{strategy}")
        print(f"  before:  {before}")
        print(f"  resize:  {resize}")
        print(f"  then:    {then}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
