"""The full stack: API -> conductor -> compute over RabbitMQ, driven over HTTP.

The production shape of ``tests/functional/services/test_rabbit_deployment.py``:
``resize-sched-api``, ``resize-sched-conductor`` (2 workers) and
``--full-stack-hosts`` ``resize-sched-compute`` daemons as subprocesses on a
RabbitMQ virtual host of their own (made with ``rabbitmqctl`` when it is on
this machine, else the URL's own), one database (SQLite file, or a scratch
database with ``--db``), and Placement served over HTTP (or in its own
process with ``--placement-db``). For each client count (``--full-stack-clients``,
1 and 4 by default), that many threads each resize their own servers through
the Compute API (resize, wait for VERIFY_RESIZE, confirm or revert in turn,
wait for ACTIVE): resizes per second, and p50/p95 from the resize request to
VERIFY_RESIZE. If RabbitMQ cannot be reached, the run says so and why.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import requests
from external_placement import ExternalPlacement, ScratchDatabase

from resize_sched.db.api import Database
from resize_sched.placement.embedded import PlacementHTTP

#: Each compute daemon's size: room for every server the clients grow.
VCPUS, MEMORY_MB, DISK_GB = 64, 65536, 2000
SMALL, MEDIUM = ("fs-small", 1, 1024, 10), ("fs-medium", 2, 2048, 20)
POLL_S = 0.02
WAIT_S = 120.0
TOKEN = "bench:bench"


class Unreachable(Exception):
    """RabbitMQ (or a daemon) is not there: the full stack is skipped."""


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_broker(url: str) -> None:
    """Open a TCP connection to the broker the URL names.

    :raises Unreachable: no URL, or nothing listens there.
    """
    if not url:
        raise Unreachable("no --transport-url and RESIZE_SCHED_TEST_RABBIT_URL is not set")
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5672
    try:
        with socket.create_connection((host, port), timeout=3):
            pass
    except OSError as exc:
        raise Unreachable(f"RabbitMQ at {host}:{port} is unreachable: {exc}") from exc


class Vhost:
    """A private virtual host via rabbitmqctl when it is here; else the URL as given."""

    def __init__(self, url: str) -> None:
        self.base_url = self.url = url
        self.name = f"rs_bench_{uuid.uuid4().hex[:10]}"
        self._ctl = shutil.which("rabbitmqctl")
        self._created = False

    def __enter__(self) -> Vhost:
        if self._ctl is None:
            return self
        user = urllib.parse.urlsplit(self.base_url).username or "guest"
        try:
            subprocess.run([self._ctl, "add_vhost", self.name], check=True, capture_output=True)
            self._created = True
            subprocess.run(
                [self._ctl, "set_permissions", "-p", self.name, user, ".*", ".*", ".*"],
                check=True,
                capture_output=True,
            )
        except subprocess.CalledProcessError:
            return self  # not allowed here: the URL's own virtual host
        parts = urllib.parse.urlsplit(self.base_url)
        self.url = urllib.parse.urlunsplit(parts._replace(path=f"/{self.name}"))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._created and self._ctl:
            subprocess.run([self._ctl, "delete_vhost", self.name], capture_output=True)


class Daemons:
    """The subprocesses and their logs; stopped with SIGTERM."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs: list[Any] = []

    def start(self, name: str, module: str, config: str) -> None:
        log = open(os.path.join(self.workdir, f"{name}.log"), "ab")  # closed in stop()
        self._logs.append(log)
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", module, "--config-file", config],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
        )

    def check(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = self.tail(name)
                raise Unreachable(f"{name} exited with {proc.returncode}:\n{tail}")

    def tail(self, name: str, lines: int = 15) -> str:
        try:
            with open(os.path.join(self.workdir, f"{name}.log"), errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for log in self._logs:
            log.close()


class Api:
    """The Compute API over HTTP as one noauth2 user."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.session = requests.Session()
        self.session.headers.update({"X-Auth-Token": TOKEN, "Accept": "application/json"})

    def post(self, path: str, body: dict[str, Any]) -> requests.Response:
        resp = self.session.post(self.endpoint + path, json=body, timeout=60)
        if resp.status_code >= 300:
            raise RuntimeError(f"POST {path}: {resp.status_code} {resp.text[:300]}")
        return resp

    def server(self, server_id: str) -> dict[str, Any]:
        resp = self.session.get(f"{self.endpoint}/servers/{server_id}", timeout=60)
        resp.raise_for_status()
        return resp.json()["server"]

    def wait(self, server_id: str, status: str) -> dict[str, Any]:
        """Poll until the server is in ``status`` with no task."""
        deadline = time.monotonic() + WAIT_S
        while True:
            server = self.server(server_id)
            if server["status"] == status and not server.get("OS-EXT-STS:task_state"):
                return server
            if server["status"] == "ERROR":
                raise RuntimeError(f"server {server_id} in ERROR: {server.get('fault')}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"server {server_id} stuck in {server['status']}/"
                    f"{server.get('OS-EXT-STS:task_state')}"
                )
            time.sleep(POLL_S)


def _wait_for(predicate: Callable[[], bool], what: str, daemons: Daemons) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        daemons.check()
        if time.monotonic() > deadline:
            raise Unreachable(f"timed out waiting for {what}")
        time.sleep(0.2)


def _drive(
    api: Api,
    servers: list[str],
    flavors: dict[str, str],
    cycles: int,
    out: dict,
    grown: set[str],
) -> None:
    """Resize ``cycles`` times over ``servers``: confirm even cycles, revert odd ones.

    :param grown: the servers that are medium now (every server starts small;
        a confirm keeps the new flavor); updated.
    """
    for n in range(cycles):
        server_id = servers[n % len(servers)]
        target = flavors["small"] if server_id in grown else flavors["medium"]
        try:
            started = time.perf_counter()
            api.post(f"/servers/{server_id}/action", {"resize": {"flavorRef": target}})
            api.wait(server_id, "VERIFY_RESIZE")
            out["to_verify_ms"].append((time.perf_counter() - started) * 1000)
            decided = time.perf_counter()
            action = "confirmResize" if n % 2 == 0 else "revertResize"
            api.post(f"/servers/{server_id}/action", {action: None})
            api.wait(server_id, "ACTIVE")
            out["confirm_ms" if n % 2 == 0 else "revert_ms"].append(
                (time.perf_counter() - decided) * 1000
            )
            out["cycles"] += 1
            if n % 2 == 0:
                grown ^= {server_id}
        except Exception as exc:  # counted and reported, never fatal
            out["errors"].append(f"{type(exc).__name__}: {str(exc)[:200]}")
            try:
                api.wait(server_id, "ACTIVE")
            except Exception:  # noqa: BLE001 - the next cycle reports it
                pass


def run(args: Any, progress: Callable[[str], None]) -> dict[str, Any]:
    """Bring the daemons up, drive them with each client count, bring them down.

    :returns: the figures, or ``{"skipped": reason}``.
    """
    try:
        check_broker(args.transport_url)
    except Unreachable as exc:
        progress(f"full stack skipped: {exc}")
        return {"skipped": str(exc)}
    workdir = tempfile.mkdtemp(prefix="bench-fullstack-")
    try:
        return _run(args, workdir, progress)
    except Unreachable as exc:
        progress(f"full stack skipped: {exc}")
        return {"skipped": str(exc)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run(args: Any, workdir: str, progress: Callable[[str], None]) -> dict[str, Any]:
    scratch = ScratchDatabase(args.db, workdir) if args.db else None
    db_url = scratch.create() if scratch else f"sqlite:///{workdir}/resize_sched.sqlite"
    placement: Any = (
        ExternalPlacement(
            args.placement_db,
            threads=args.placement_threads,
            processes=args.placement_processes,
        )
        if args.placement_db
        else PlacementHTTP(os.path.join(workdir, "placement"))
    )
    daemons = Daemons(workdir)
    try:
        with Vhost(args.transport_url) as vhost, placement:
            db = Database(db_url)
            db.sync()
            flavors = {
                "small": db.flavor_create(*SMALL).flavorid,
                "medium": db.flavor_create(*MEDIUM).flavorid,
            }
            api_port = _free_port()
            common = (
                f"[DEFAULT]\ntransport_url = {vhost.url}\n"
                f"[database]\nconnection = {db_url}\n"
                f"[placement]\nauth_type = admin_token\nendpoint = {placement.endpoint}\n"
                "token = admin\n"
                f"[api]\nbind_host = 127.0.0.1\nbind_port = {api_port}\nauth_strategy = noauth2\n"
                "[conductor]\nworkers = 2\n"
                f"[resize]\nclaim_strategy = max_flavor\n"
            )
            started = time.perf_counter()
            for i in range(args.full_stack_hosts):
                name = f"fs-host{i:03d}"
                path = os.path.join(workdir, f"{name}.conf")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(
                        common
                        + f"[compute]\nvcpus = {VCPUS}\nmemory_mb = {MEMORY_MB}\n"
                        + f"disk_gb = {DISK_GB}\nreserved_host_memory_mb = 0\n"
                        + f"[DEFAULT]\nhost = {name}\n"
                    )
                daemons.start(name, "resize_sched.cmd.compute", path)
            services = os.path.join(workdir, "services.conf")
            with open(services, "w", encoding="utf-8") as f:
                f.write(common + "[DEFAULT]\nhost = bench-control\n")
            daemons.start("conductor", "resize_sched.cmd.conductor", services)
            daemons.start("api", "resize_sched.cmd.api", services)
            client = placement.client()
            _wait_for(
                lambda: len(client.list_resource_providers()) == args.full_stack_hosts,
                "the compute daemons to register",
                daemons,
            )
            endpoint = f"http://127.0.0.1:{api_port}/v2.1"

            def api_up() -> bool:
                try:
                    return requests.get(endpoint + "/", timeout=1).status_code < 500
                except requests.RequestException:
                    return False

            _wait_for(api_up, "the API", daemons)
            api = Api(endpoint)
            clients = args.full_stack_clients
            per_client = max(2, -(-args.full_stack_resizes // max(clients)))
            server_ids = []
            for i in range(max(clients) * per_client):
                resp = api.post(
                    "/servers", {"server": {"name": f"fs{i}", "flavorRef": flavors["small"]}}
                )
                server_ids.append(resp.json()["server"]["id"])
            for server_id in server_ids:
                api.wait(server_id, "ACTIVE")
            # One warm-up resize: the first messages set up exchanges and queues.
            warm: dict[str, Any] = {"to_verify_ms": [], "confirm_ms": [], "revert_ms": []}
            warm.update(cycles=0, errors=[])
            grown: set[str] = set()
            _drive(api, server_ids[:1], flavors, 2, warm, grown)
            setup_s = time.perf_counter() - started
            progress(f"full stack up in {setup_s:.0f} s ({args.full_stack_hosts} computes)")
            runs = []
            for count in clients:
                progress(f"full stack: {count} client(s)...")
                outs = []
                threads = []
                shares = [
                    args.full_stack_resizes // count
                    + (1 if i < args.full_stack_resizes % count else 0)
                    for i in range(count)
                ]
                for c in range(count):
                    out: dict[str, Any] = {"to_verify_ms": [], "confirm_ms": [], "revert_ms": []}
                    out.update(cycles=0, errors=[])
                    outs.append(out)
                    mine = server_ids[c * per_client : (c + 1) * per_client]
                    threads.append(
                        threading.Thread(
                            target=_drive,
                            args=(Api(endpoint), mine, flavors, shares[c], out, grown),
                        )
                    )
                begun = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                elapsed = time.perf_counter() - begun
                verify = [ms for o in outs for ms in o["to_verify_ms"]]
                cycles = sum(o["cycles"] for o in outs)
                errors = [e for o in outs for e in o["errors"]]
                runs.append(
                    {
                        "clients": count,
                        "cycles": cycles,
                        "elapsed_s": round(elapsed, 2),
                        "resizes_per_s": round(cycles / elapsed, 3) if elapsed else None,
                        "to_verify_resize_ms": {
                            "n": len(verify),
                            "p50": _percentile(verify, 50),
                            "p95": _percentile(verify, 95),
                            "mean": statistics.mean(verify) if verify else None,
                        },
                        "confirm_ms_p50": _percentile(
                            [ms for o in outs for ms in o["confirm_ms"]], 50
                        ),
                        "revert_ms_p50": _percentile(
                            [ms for o in outs for ms in o["revert_ms"]], 50
                        ),
                        "errors": errors,
                    }
                )
            daemons.check()
            db.dispose()
            return {
                "computes": args.full_stack_hosts,
                "conductor_workers": 2,
                "placement": "external" if args.placement_db else "over HTTP (one thread)",
                "database": "scratch on --db" if args.db else "SQLite file",
                "broker": urllib.parse.urlsplit(vhost.url)._replace(netloc="...").geturl(),
                "setup_s": round(setup_s, 1),
                "runs": runs,
            }
    finally:
        daemons.stop()
        if scratch:
            scratch.drop()


def print_report(figures: dict[str, Any]) -> None:
    """The full stack's table, or why it was skipped."""
    if "skipped" in figures:
        print(f"\nFull stack: skipped ({figures['skipped']})")
        return
    print(
        f"\nFull stack: API -> conductor ({figures['conductor_workers']} workers) -> "
        f"{figures['computes']} compute daemons over RabbitMQ, Placement "
        f"{figures['placement']}, database {figures['database']}, max_flavor; "
        f"setup {figures['setup_s']} s"
    )
    head = (
        f"{'clients':>8}{'cycles':>8}{'resizes/s':>10}{'to VERIFY p50':>15}"
        f"{'p95 (ms)':>10}{'confirm p50':>13}{'revert p50':>12}{'errors':>8}"
    )
    print(head)
    print("-" * len(head))

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    for run in figures["runs"]:
        verify = run["to_verify_resize_ms"]
        print(
            f"{run['clients']:>8}{run['cycles']:>8}{run['resizes_per_s'] or 0:>10.2f}"
            f"{ms(verify['p50']):>15}{ms(verify['p95']):>10}{ms(run['confirm_ms_p50']):>13}"
            f"{ms(run['revert_ms_p50']):>12}{len(run['errors']):>8}"
        )
        for error in run["errors"][:3]:
            print(f"    {error}")
