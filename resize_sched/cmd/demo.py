"""``resize-sched-demo``: how the three claim strategies differ, on Nova bug 1790204.

Starts the all-in-one (real Placement, API, conductor, three fake compute
hosts) in a temporary directory and, once per strategy, through the Compute
API:

#. fills every host with one server whose flavor takes all its memory and
   disk, then resizes one of them to a flavor with more VCPU and less memory:
   it fits only in the room the server itself leaves, on its own host (the
   bug's case). What Placement holds there during VERIFY_RESIZE differs:
   ``max_flavor`` keeps ``max(old, new)``, ``drop_and_reclaim`` only ``new``;
#. boots another server while that resize waits, which takes the memory
   ``drop_and_reclaim`` let go, then reverts the resize: refused for
   ``drop_and_reclaim`` (the old flavor no longer fits), never for
   ``max_flavor``;
#. resizes another server to another host (``[resize] allow_same_host``
   off), where the three hold the same;
#. resizes a member of a strict ``affinity`` server group on its full host,
   every other host empty: the group pins it there, so ``legacy`` fails as
   Nova does and the other two resize it in place (the case this project
   exists for).

It prints what each step held and the Placement requests each resize made,
then stops everything and removes the directory (``--keep`` keeps it, with
the services' log).
"""

import argparse
import logging as std_logging
import os
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from typing import Any

import requests
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import resources as rs
from resize_sched.cmd import setup_logging

LOG = logging.getLogger(__name__)

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
HOSTS = ("host1", "host2", "host3")
#: Each host: 4 VCPU, 4096 MB, 100 GB, and 2 PCPU no demo flavor uses
#: (a dedicated flavor can be tried on the demo's cloud).
HOST = "4:4096:100:2"
WIDE = {"name": "wide", "vcpus": 1, "ram": 4096, "disk": 100}
TALL = {"name": "tall", "vcpus": 2, "ram": 2048, "disk": 100}
FILLER = {"name": "filler", "vcpus": 1, "ram": 2048, "disk": 0}

WHAT = {
    "legacy": "Nova's claim: old moves to the migration and the whole new flavor is "
    "asked on top, so a full host cannot resize in place (Nova bug 1790204)",
    "drop_and_reclaim": "drops old before asking, so the source offers the room the "
    "server leaves; re-claims old if another host is chosen",
    "max_flavor": "drops nothing; asks the source only for new - old and holds "
    "max(old, new) there until confirm or revert (the default)",
}


def _amounts(used: dict[str, int]) -> str:
    """``VCPU 2, MEMORY_MB 4096, DISK_GB 100`` (in that order), or ``nothing``."""
    order = (rs.VCPU, rs.MEMORY_MB, rs.DISK_GB)
    classes = [rc for rc in order if used.get(rc)] + sorted(set(used) - set(order))
    return ", ".join(f"{rc} {used[rc]}" for rc in classes if used[rc]) or "nothing"


def _flavor_text(spec: dict) -> str:
    return f"{spec['name']} ({spec['vcpus']} VCPU, {spec['ram']} MB, {spec['disk']} GB)"


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

    def server(self, server_id: str) -> dict:
        return self.call("GET", f"/servers/{server_id}")["server"]

    def wait(self, server_id: str, done: Sequence[str], timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            server = self.server(server_id)
            if server["status"] in done and server["OS-EXT-STS:task_state"] is None:
                return server
            if time.monotonic() > deadline:
                raise RuntimeError(f"server {server_id} stuck in {server['status']}")
            time.sleep(0.05)

    def wait_gone(self, server_id: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = self.session.get(f"{self.endpoint}/servers/{server_id}", timeout=30)
            if response.status_code == 404:
                return
            time.sleep(0.05)
        raise RuntimeError(f"server {server_id} was not deleted")

    def boot(self, name: str, flavor: str, group: str | None = None) -> str:
        body: dict[str, Any] = {"server": {"name": name, "flavorRef": flavor}}
        if group is not None:
            body["os:scheduler_hints"] = {"group": group}
        return self.call("POST", "/servers", body)["server"]["id"]

    def action(self, server_id: str, body: dict) -> None:
        self.call("POST", f"/servers/{server_id}/action", body)

    def delete(self, server_id: str) -> None:
        self.call("DELETE", f"/servers/{server_id}")
        self.wait_gone(server_id)


class Recorder:
    """The Placement requests the conductor makes, method and route."""

    def __init__(self, client: Any) -> None:
        self.requests: list[str] = []
        original = client._request

        def recorded(method: str, path: str, version: Any, **kwargs: Any) -> Any:
            route = path.split("?")[0].strip("/").split("/")
            # NOTE: /resource_providers/{uuid}/usages -> usages; uuids are noise.
            self.requests.append(f"{method} {route[-1] if len(route) > 2 else route[0]}")
            return original(method, path, version, **kwargs)

        client._request = recorded

    def take(self) -> str:
        """The requests since the last take, in the order sent, except that
        reads sent one after another are listed by name: the scheduler makes
        some at once (a source's usage beside the candidates query), so their
        order is not the run's to tell."""
        taken, self.requests = self.requests, []
        listed: list[str] = []
        reads: list[str] = []
        for request in taken:
            if request.startswith("GET "):
                reads.append(request)
                continue
            listed += sorted(reads) + [request]
            reads = []
        listed += sorted(reads)
        return f"{len(taken)} ({', '.join(listed)})"


class Demo:
    """The three steps, once per strategy, on one all-in-one."""

    def __init__(self, aio: Any) -> None:
        self.aio = aio
        self.api = Api(aio.api_endpoint)
        self.placement = aio.placement.client()
        self.recorder = Recorder(aio.conductor.client)
        self.flavors = {
            spec["name"]: self.api.call("POST", "/flavors", {"flavor": spec})["flavor"]["id"]
            for spec in (WIDE, TALL, FILLER)
        }
        self.providers = {
            host: self.placement.list_resource_providers(name=host)[0]["uuid"] for host in HOSTS
        }

    def held(self, host: str) -> str:
        used = self.placement.get_usages(self.providers[host])
        return _amounts(used)

    def configure(self, strategy: str, allow_same_host: bool = True) -> None:
        # NOTE: the all-in-one's API and conductor share this configuration,
        # as a SIGHUP after editing the file would make them share it.
        self.aio.conf.set_override("claim_strategy", strategy, group="resize")
        self.aio.conf.set_override("allow_same_host", allow_same_host, group="resize")

    def resize(self, server_id: str, flavor: str) -> tuple[dict, str]:
        """Resize and wait for VERIFY_RESIZE or the end; the server and the requests."""
        self.recorder.take()
        self.api.action(server_id, {"resize": {"flavorRef": self.flavors[flavor]}})
        server = self.api.wait(server_id, ("VERIFY_RESIZE", "ACTIVE", "ERROR"))
        return server, self.recorder.take()

    def run(self, strategy: str) -> dict[str, list[str]]:
        """The three steps under ``strategy``; the lines to print for each."""
        api = self.api
        self.configure(strategy)
        servers = {name: api.boot(name, self.flavors["wide"]) for name in ("vm-a", "vm-b", "vm-c")}
        hosts = {
            name: api.wait(sid, ("ACTIVE",))["OS-EXT-SRV-ATTR:host"]
            for name, sid in servers.items()
        }
        lines: dict[str, list[str]] = {"same": [], "fill": [], "other": []}

        # 1. Same host: vm-a fits only in the room it leaves.
        host_a = hosts["vm-a"]
        server, made = self.resize(servers["vm-a"], "tall")
        if server["status"] == "VERIFY_RESIZE":
            lines["same"].append(f"VERIFY_RESIZE on {server['OS-EXT-SRV-ATTR:host']}")
            lines["same"].append(f"{host_a} holds {self.held(host_a)}")
        else:
            # NOTE: why it failed is ours, not Nova's: from our records, as
            # resize-sched-manage migration show reads it.
            kind = self.aio.db.migration_list(server_uuid=servers["vm-a"])[-1].error_kind
            kind = kind or "error"
            lines["same"].append(f"NoValidHost ({kind}) <- Nova bug 1790204")
            lines["same"].append(
                f"vm-a {server['status']} with wide; {host_a} holds {self.held(host_a)}"
            )
        lines["same"].append(f"Placement requests: {made}")

        # 2. Someone boots into the room freed, then the resize is reverted.
        if server["status"] == "VERIFY_RESIZE":
            filler = api.boot("filler", self.flavors["filler"])
            booted = api.wait(filler, ("ACTIVE", "ERROR"))
            if booted["status"] == "ACTIVE":
                lines["fill"].append(f"filler ACTIVE on {booted['OS-EXT-SRV-ATTR:host']}")
            else:
                lines["fill"].append("filler ERROR: no host has 2048 MB free")
            api.action(servers["vm-a"], {"revertResize": None})
            reverted = api.wait(servers["vm-a"], ("ACTIVE", "VERIFY_RESIZE", "ERROR"))
            if reverted["status"] == "VERIFY_RESIZE":
                lines["fill"].append("revert REFUSED: vm-a stays in VERIFY_RESIZE with tall")
                api.delete(filler)
                filler = None
                api.action(servers["vm-a"], {"revertResize": None})
                reverted = api.wait(servers["vm-a"], ("ACTIVE", "VERIFY_RESIZE", "ERROR"))
                lines["fill"].append(
                    f"filler deleted, revert asked again: vm-a {reverted['status']}"
                )
            else:
                lines["fill"].append(f"revert: vm-a {reverted['status']} with wide")
            lines["fill"].append(f"{host_a} holds {self.held(host_a)}")
            if filler is not None:
                api.delete(filler)
        else:
            lines["fill"].append("nothing to revert: the resize never began")

        # 3. Another host: vm-c's host is emptied, vm-b must move there.
        api.delete(servers["vm-c"])
        self.configure(strategy, allow_same_host=False)
        server, made = self.resize(servers["vm-b"], "tall")
        dest = server["OS-EXT-SRV-ATTR:host"]
        lines["other"].append(f"{server['status']} on {dest}")
        lines["other"].append(f"{hosts['vm-b']} (source) holds {self.held(hosts['vm-b'])}")
        lines["other"].append(f"{dest} holds {self.held(dest)}")
        lines["other"].append(f"Placement requests: {made}")
        if server["status"] == "VERIFY_RESIZE":
            api.action(servers["vm-b"], {"confirmResize": None})
            api.wait(servers["vm-b"], ("ACTIVE",))
        self.configure(strategy)
        for name in ("vm-a", "vm-b"):
            api.delete(servers[name])
        lines["group"] = self.affinity_member()
        return lines

    def affinity_member(self) -> list[str]:
        """4. A strict-affinity member on its full host, every other host empty."""
        api = self.api
        body = {"server_group": {"name": "pinned", "policies": ["affinity"]}}
        group = api.call("POST", "/os-server-groups", body)["server_group"]["id"]
        member = api.boot("vm-g", self.flavors["wide"], group)
        host = api.wait(member, ("ACTIVE",))["OS-EXT-SRV-ATTR:host"]
        server, made = self.resize(member, "tall")
        lines = []
        if server["status"] == "VERIFY_RESIZE":
            lines.append(f"VERIFY_RESIZE in place on {server['OS-EXT-SRV-ATTR:host']}, confirmed")
            api.action(member, {"confirmResize": None})
            api.wait(member, ("ACTIVE",))
        else:
            lines.append("NoValidHost: the group allows only its full host")
        lines.append(f"{host} holds {self.held(host)}; Placement requests: {made}")
        api.delete(member)
        api.call("DELETE", f"/os-server-groups/{group}")
        return lines


#: The output fits a terminal this wide.
WIDTH = 100

READING = (
    "1. legacy asks vm-a's full host for the whole tall flavor on top of wide, so the resize "
    "fails: Nova bug 1790204. 'deferred' means no host has the room now, though some host "
    "could when emptier; the resize has ended, the server is ACTIVE with its old flavor, and "
    "nothing retries it: the user may ask again later. drop_and_reclaim holds only tall "
    "(VCPU 2, 2048 MB); max_flavor holds max(wide, tall) (VCPU 2, 4096 MB) until confirm or "
    "revert: tall for the server, the other 2048 MB for the migration, so that a confirm "
    "only empties the migration.",
    "2. The 2048 MB drop_and_reclaim let go was taken, so its revert is refused until room is "
    "freed (the server waits in VERIFY_RESIZE; a conductor's sweep begins it again once the "
    "host's usage changes). max_flavor "
    "kept the room, so its revert gives back only what the resize already held there (it "
    "fits while the host's inventory still admits wide); the filler found no host instead.",
    "3. Moving to another host, all three hold the same: wide on the source for the "
    "migration, tall on the destination for the server, until confirm.",
    "4. A server group's strict policy makes every host but one unusable: the empty hosts "
    "do not help a member of an affinity group (its group is where it is), so Nova's claim "
    "fails while the other two strategies resize it where it is. Anti-affinity with a member "
    "on every other host, and a one-host availability zone, are the same case.",
    "Requests: max_flavor costs 2 when the resize moves (the query over every host and one "
    "claim), 3 on the same host here: a full source is not among the answers to a query for "
    "the whole new flavor, so its usage is read (one GET) to judge new - old. With [resize] "
    "prefer_same_host the source is asked first and the same-host resize costs 2. legacy and "
    "drop_and_reclaim write once more either way: legacy's prepare (old to the migration, "
    "beside the query), drop_and_reclaim's drop (before the query).",
)


def _wrap(text: str, first: str = "", indent: int | None = None) -> str:
    """``text`` filled to :data:`WIDTH`, after ``first``, continued under it."""
    rest = " " * (len(first) if indent is None else indent)
    return textwrap.fill(
        text,
        WIDTH,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def _print(results: dict[str, dict[str, list[str]]]) -> None:
    print("Claim strategies ([resize] claim_strategy):")
    for strategy in STRATEGIES:
        print(_wrap(WHAT[strategy], f"  {strategy:<17} "))
    print()
    print(
        _wrap(
            f"Hosts {', '.join(HOSTS)}: 4 VCPU, 4096 MB, 100 GB each. Flavors: "
            f"{_flavor_text(WIDE)}, {_flavor_text(TALL)}, {_flavor_text(FILLER)}."
        )
    )
    print(
        _wrap(
            "Each strategy starts from the same state: vm-a, vm-b and vm-c (wide), one per "
            "host, so every host's memory and disk are full."
        )
    )
    steps = (
        (
            "same",
            "1. vm-a: wide -> tall. Every host is full; tall fits only in the room vm-a "
            "itself leaves on its host. Held during VERIFY_RESIZE:",
        ),
        (
            "fill",
            "2. While vm-a waits in VERIFY_RESIZE, someone boots filler "
            f"({FILLER['vcpus']} VCPU, {FILLER['ram']} MB), then vm-a's resize is reverted:",
        ),
        (
            "other",
            "3. vm-c deleted; vm-b: wide -> tall with [resize] allow_same_host = False, "
            "so it moves:",
        ),
        (
            "group",
            "4. vm-g (wide), alone in a strict affinity server group, fills its host; the "
            "other hosts are empty. vm-g: wide -> tall:",
        ),
    )
    for key, title in steps:
        print()
        print(_wrap(title, indent=3))
        for strategy in STRATEGIES:
            rows = results[strategy][key]
            print(_wrap(rows[0], f"  {strategy:<17} "))
            for row in rows[1:]:
                print(_wrap(row, f"  {'':<17} "))
    print("\nHow to read it:")
    for paragraph in READING:
        print(_wrap(paragraph, "  ", indent=5 if paragraph[0].isdigit() else 4))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="resize-sched-demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--verbose", action="store_true", help="show the services' logs")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary directory (databases and the services' log) and say where",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    workdir = tempfile.mkdtemp(prefix="resize-sched-demo-")
    # NOTE: the services log to a file in workdir; give the process its own
    # logging back before the file goes, or a caller that goes on (a test run)
    # would log into a removed file.
    root = std_logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    try:
        return _run(args, workdir)
    finally:
        for handler in root.handlers[:]:
            if handler not in saved_handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in saved_handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(saved_level)
        if args.keep:
            print(f"\nKept {workdir} (the services' log is {workdir}/services.log)")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(args: argparse.Namespace, workdir: str) -> int:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[], prog="resize-sched-demo")
    conf.set_override("debug", False)
    if not args.verbose:
        # NOTE: keep the screen for the results; the services log to a file.
        conf.set_override("log_file", os.path.join(workdir, "services.log"))
        conf.set_override("use_stderr", False)
    setup_logging(conf)
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("bind_host", "127.0.0.1", group="api")
    conf.set_override("bind_port", 0, group="api")
    conf.set_override("placement_port", 0, group="all_in_one")
    conf.set_override("state_path", os.path.join(workdir, "state"), group="all_in_one")
    conf.set_override("hosts", [f"{name}:{HOST}" for name in HOSTS], group="all_in_one")

    from resize_sched.all_in_one import AllInOne

    print("Starting the all-in-one: Placement (SQLite), API, conductor, 3 compute hosts...")
    aio = AllInOne(conf)
    aio.start()
    try:
        demo = Demo(aio)
        results = {strategy: demo.run(strategy) for strategy in STRATEGIES}
    finally:
        aio.stop()
    _print(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
