"""The soak's deployment: every daemon a real process, Placement behind the proxy.

:class:`Stack` starts, in order: a private RabbitMQ virtual host, a scratch
database for resize_sched on the MariaDB server, openstack-placement in its
own processes on a scratch database of its own (the benchmark's
:class:`ExternalPlacement`), the :class:`~tests.chaos.proxy.ChaosProxy` in
front of it, then ``resize-sched-compute`` per host, ``resize-sched-conductor``
(two workers under cotyledon) and ``resize-sched-api``. Every daemon reaches
Placement through the proxy only; the soak's own checks read Placement
directly.

:meth:`Stack.close` stops everything and drops what was made, whatever
state the start reached; it is safe to call twice and from a signal handler's
aftermath. A start that does not finish raises :class:`HarnessError` with
the daemon's name and the tail of its log.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

import requests

from resize_sched.db.api import Database
from resize_sched.db.scratch import ScratchDatabase
from tests.chaos.proxy import KINDS, ChaosProxy
from tests.harness import HarnessError, children, free_port, kill_group, signal_group, tail

#: HarnessError and free_port are the harness's; tests/tempest takes them from here.
__all__ = ["REPO", "HarnessError", "Stack", "free_port"]

LOG = logging.getLogger(__name__)

REPO = pathlib.Path(__file__).resolve().parents[2]
#: The prefix of every scratch database and virtual host the soak makes.
PREFIX = "rs_chaos_"


def _external_placement() -> Any:
    """The benchmark's ExternalPlacement class (benchmarks/ is not a package)."""
    path = REPO / "benchmarks" / "external_placement.py"
    spec = importlib.util.spec_from_file_location("rs_chaos_external_placement", path)
    if spec is None or spec.loader is None:
        raise HarnessError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.ExternalPlacement


class Vhost:
    """A private RabbitMQ virtual host (rabbitmqctl), deleted on :meth:`delete`."""

    def __init__(self, url: str, prefix: str = PREFIX) -> None:
        self.base_url = url
        self.name = f"{prefix}{uuid.uuid4().hex[:10]}"
        self.url = ""
        self._ctl = shutil.which("rabbitmqctl")
        self._created = False

    def create(self) -> str:
        if self._ctl is None:
            raise HarnessError(
                "rabbitmqctl is not on PATH: the soak needs a private virtual host on a "
                "local RabbitMQ"
            )
        user = urllib.parse.urlsplit(self.base_url).username or "guest"
        try:
            subprocess.run(
                [self._ctl, "add_vhost", self.name], check=True, capture_output=True, timeout=60
            )
            self._created = True
            subprocess.run(
                [self._ctl, "set_permissions", "-p", self.name, user, ".*", ".*", ".*"],
                check=True,
                capture_output=True,
                timeout=60,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            out = getattr(exc, "stderr", b"") or b""
            raise HarnessError(f"rabbitmqctl failed: {exc}: {out.decode()[:300]}") from exc
        parts = urllib.parse.urlsplit(self.base_url)
        self.url = urllib.parse.urlunsplit(parts._replace(path=f"/{self.name}"))
        return self.url

    def consumers(self, queue: str) -> int:
        """How many consumers ``queue`` has now (0 when it does not exist)."""
        out = subprocess.run(
            [self._ctl or "rabbitmqctl", "list_queues", "-p", self.name]
            + ["name", "consumers", "--no-table-headers", "--quiet"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        counts = dict(line.split() for line in out.splitlines() if line.strip())
        return int(counts.get(queue, 0))

    def delete(self) -> None:
        if self._created:
            self._created = False
            subprocess.run(
                [self._ctl or "rabbitmqctl", "delete_vhost", self.name],
                capture_output=True,
                timeout=120,
            )


class Daemon:
    """One resize_sched daemon: its command, process and log."""

    def __init__(self, name: str, module: str, config: pathlib.Path, workdir: pathlib.Path):
        self.name = name
        self.module = module
        self.config = config
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.started_at = 0.0

    def start(self, env: dict[str, str]) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"==== soak: start #{self.starts + 1} at {time.time():.3f}\n".encode())
            log.flush()
            # NOTE: a session of its own, so a Ctrl-C in the terminal reaches
            # the soak only, which then stops every daemon in order.
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, "--config-file", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.log_path.parent,
                env=env,
                start_new_session=True,
            )
        self.starts += 1
        self.started_at = time.monotonic()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the daemon's whole process group and reap it."""
        if self.proc is not None:
            kill_group(self.proc)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM (SIGKILL after ``timeout``); the exit code, None if killed."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            signal_group(self.proc, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return None
        # NOTE: a group may outlive its leader (cotyledon's workers).
        signal_group(self.proc, signal.SIGKILL)
        return self.proc.returncode

    def tail(self) -> str:
        return tail(self.log_path)


class Stack:
    """The deployment under test.

    :param workdir: config files and logs go here.
    :param transport_url: a RabbitMQ URL (the server's default virtual host).
    :param db_url: a MariaDB/MySQL URL (the scratch databases are made there).
    :param strategy: the claim strategy of the deployment.
    :param computes: how many compute daemons.
    :param seed: seeds the proxy's faults.
    :param fault_rate: the chance a Placement request gets a fault (when on).
    :param placement_timeout: the daemons' ``[placement] timeout`` (seconds).
    :param fault_kinds: the Placement faults to draw from.
    :param options: config text appended to every daemon's file.
    :param prefix: the prefix of the scratch database's and virtual host's names.
    :param lift_quotas: no limit on a project's servers, cores and RAM (the
        soak's clients share one project); False keeps Nova's default quotas.
    :param vhost: the virtual host to make and use, an object like
        :class:`Vhost` (``create()`` returning its URL, ``consumers(queue)``,
        ``delete()``, ``name``); by default a :class:`Vhost` on
        ``transport_url``'s broker.
    :param database: resize_sched's database, made by the caller (its schema
        is synced here, it is not dropped); by default a scratch database on
        ``db_url``. Placement's stays on ``db_url`` either way.
    :param database_urls: daemon name -> the ``[database] connection`` that
        daemon uses instead of ``database`` (the HA run points each at its own
        Galera node).
    :param conductors: how many conductor services: ``conductor``, then
        ``conductor2``...
    :param conductor_workers: each conductor service's ``[conductor] workers``.
    """

    #: Every compute host's inventory.
    VCPUS, MEMORY_MB, DISK_GB = 8, 8192, 120

    def __init__(
        self,
        workdir: pathlib.Path,
        transport_url: str,
        db_url: str,
        *,
        strategy: str,
        computes: int,
        seed: int,
        fault_rate: float,
        placement_timeout: float,
        fault_kinds: tuple[str, ...] = KINDS,
        options: str = "",
        prefix: str = PREFIX,
        lift_quotas: bool = True,
        vhost: Any = None,
        database: str | None = None,
        database_urls: dict[str, str] | None = None,
        conductors: int = 1,
        conductor_workers: int = 2,
    ) -> None:
        self.workdir = workdir
        self.transport_url = transport_url
        self.db_url = db_url
        self.strategy = strategy
        self.computes = computes
        self.seed = seed
        self.fault_rate = fault_rate
        self.placement_timeout = placement_timeout
        self.fault_kinds = fault_kinds
        self.options = options
        self.prefix = prefix
        self.lift_quotas = lift_quotas
        self.vhost = vhost if vhost is not None else Vhost(transport_url, prefix)
        self.database = database
        self.database_urls = dict(database_urls or {})
        self.conductors = conductors
        self.workers_per_conductor = conductor_workers
        self.scratch: ScratchDatabase | None = None
        self.placement: Any = None
        self.proxy: ChaosProxy | None = None
        self.db: Database | None = None
        self.daemons: dict[str, Daemon] = {}
        self.api_port = 0
        self.endpoint = ""
        self.providers: dict[str, str] = {}
        self.env = dict(os.environ)
        path = self.env.get("PYTHONPATH", "")
        self.env["PYTHONPATH"] = f"{REPO}{os.pathsep}{path}" if path else str(REPO)
        self.env["PYTHONUNBUFFERED"] = "1"

    # -- start ------------------------------------------------------------------------

    def start(self, progress: Callable[[str], None]) -> None:
        """Bring everything up; :class:`HarnessError` when something does not come."""
        try:
            vhost_url = self.vhost.create()
            if self.database is not None:
                our_url = self.database
            else:
                self.scratch = ScratchDatabase(self.db_url, prefix=self.prefix, sqlite=False)
                our_url = self.scratch.create()
        except HarnessError:
            raise
        except Exception as exc:
            raise HarnessError(f"cannot make the scratch database or virtual host: {exc}") from exc
        self.db = Database(our_url)
        self.db.sync()
        shown = self.scratch.name if self.scratch is not None else our_url.rsplit("/", 1)[-1]
        progress(f"database {shown}, virtual host {self.vhost.name}")
        ExternalPlacement = _external_placement()
        try:
            self.placement = ExternalPlacement(
                self.db_url,
                threads=4,
                processes=2,
                options={"placement": {"allocation_conflict_retry_count": 1}},
            ).start()
        except Exception as exc:
            self.placement = None
            raise HarnessError(f"Placement did not start: {exc}") from exc
        # NOTE: delay and hold keep a request back past the daemons' time-out.
        self.proxy = ChaosProxy(
            self.placement.endpoint,
            seed=self.seed,
            rate=self.fault_rate,
            delay=self.placement_timeout + 2.0,
            kinds=self.fault_kinds,
            fault_log=str(self.workdir / "faults.log"),
        ).start()
        progress(f"Placement up ({self.placement.describe()}), proxy at {self.proxy.endpoint}")
        self.api_port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.api_port}/v2.1"
        common = textwrap.dedent(
            f"""\
            [DEFAULT]
            transport_url = {vhost_url}
            [database]
            connection = {our_url}
            [placement]
            auth_type = admin_token
            endpoint = {self.proxy.endpoint}
            token = admin
            timeout = {self.placement_timeout}
            [api]
            bind_host = 127.0.0.1
            bind_port = {self.api_port}
            auth_strategy = noauth2
            [conductor]
            workers = {self.workers_per_conductor}
            [resize]
            claim_strategy = {self.strategy}
            allow_same_host = true
            """
        )
        if self.lift_quotas:
            # NOTE: the clients share one project; Nova's default quotas
            # (10 servers) would refuse builds the soak means to race.
            common += "[quota]\ninstances = -1\ncores = -1\nram = -1\n"
        common += textwrap.dedent(self.options)
        for i in range(1, self.computes + 1):
            name = f"compute{i}"
            config = self.workdir / f"{name}.conf"
            config.write_text(
                common
                + f"\n[compute]\nvcpus = {self.VCPUS}\nmemory_mb = {self.MEMORY_MB}\n"
                + f"disk_gb = {self.DISK_GB}\nreserved_host_memory_mb = 0\n"
                + f"[DEFAULT]\nhost = {name}\n"
            )
            self.daemons[name] = Daemon(name, "resize_sched.cmd.compute", config, self.workdir)
        services = self.workdir / "services.conf"
        services.write_text(common + "\n[DEFAULT]\nhost = control\n")
        names = ["conductor"] + [f"conductor{i}" for i in range(2, self.conductors + 1)]
        for name in names:
            self.daemons[name] = Daemon(
                name, "resize_sched.cmd.conductor", self._config(name, services), self.workdir
            )
        self.daemons["api"] = Daemon(
            "api", "resize_sched.cmd.api", self._config("api", services), self.workdir
        )
        for name, daemon in self.daemons.items():
            if name.startswith("compute"):
                daemon.config = self._config(name, daemon.config)
        for daemon in self.daemons.values():
            daemon.start(self.env)
        client = self.placement.client()
        self._wait(
            lambda: len(client.list_resource_providers()) == self.computes,
            "the compute daemons to register their providers",
        )
        self.providers = {rp["name"]: rp["uuid"] for rp in client.list_resource_providers()}
        workers = self.conductors * self.workers_per_conductor
        self._wait(
            lambda: len(self.all_conductor_workers()) == workers, f"{workers} conductor workers"
        )
        # NOTE: a cast to a topic nobody consumes yet is dropped by the broker.
        self._wait(
            lambda: self.vhost.consumers("conductor") >= workers, "the conductor to consume"
        )

        def api_up() -> bool:
            try:
                return requests.get(self.endpoint + "/", timeout=2).status_code < 500
            except requests.RequestException:
                return False

        self._wait(api_up, "the API to answer")
        services = "a conductor" if self.conductors == 1 else f"{self.conductors} conductors"
        progress(
            f"{self.computes} computes, {services} with {self.workers_per_conductor} "
            f"workers and the API are up (strategy {self.strategy})"
        )

    def _config(self, name: str, shared: pathlib.Path) -> pathlib.Path:
        """``shared``, or a file of the daemon's own when it has a database URL of its own."""
        url = self.database_urls.get(name)
        if url is None:
            return shared
        own = self.workdir / f"{name}.conf"
        own.write_text(shared.read_text() + f"\n[database]\nconnection = {url}\n")
        return own

    def _wait(self, predicate: Callable[[], bool], what: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for daemon in self.daemons.values():
                if daemon.proc is not None and daemon.proc.poll() is not None:
                    raise HarnessError(
                        f"{daemon.name} exited with {daemon.proc.returncode} while starting; "
                        f"last lines of {daemon.log_path}:\n{daemon.tail()}"
                    )
            try:
                if predicate():
                    return
            except Exception as exc:  # noqa: BLE001 - not up yet
                LOG.debug("waiting for %s: %s", what, exc)
            if time.monotonic() > deadline:
                logs = "\n".join(
                    f"--- {d.name} ({d.log_path}):\n{d.tail()}" for d in self.daemons.values()
                )
                raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what}\n{logs}")
            time.sleep(0.5)

    # -- chaos ------------------------------------------------------------------------

    def conductor_workers(self, name: str = "conductor") -> list[int]:
        """A conductor service's worker processes (cotyledon's children)."""
        daemon = self.daemons.get(name)
        if daemon is None or not daemon.alive():
            return []
        assert daemon.proc is not None
        return children(daemon.proc.pid)

    def conductor_names(self) -> list[str]:
        return [name for name in self.daemons if name.startswith("conductor")]

    def all_conductor_workers(self) -> list[int]:
        """Every conductor service's worker processes."""
        return [pid for name in self.conductor_names() for pid in self.conductor_workers(name)]

    def compute_names(self) -> list[str]:
        return [name for name in self.daemons if name.startswith("compute")]

    def kill_conductor_worker(self, rng: random.Random) -> str | None:
        """SIGKILL one conductor worker (cotyledon starts another); its label."""
        workers = sorted(self.conductor_workers())
        if not workers:
            return None
        pid = rng.choice(workers)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return f"conductor worker {pid}"

    # -- stop -------------------------------------------------------------------------

    def _stop_one(self, name: str, codes: dict[str, int | None]) -> None:
        try:
            codes[name] = self.daemons[name].stop()
        except Exception as exc:  # noqa: BLE001 - keep cleaning up
            LOG.warning("stopping %s: %s", name, exc)

    def close(self) -> dict[str, int | None]:
        """Stop every daemon, Placement and the proxy; drop the databases and vhost.

        :returns: each daemon's exit code on SIGTERM (None: it had to be killed).
        """
        codes: dict[str, int | None] = {}
        # NOTE: the API and the conductor first, so nothing new reaches a
        # compute; each group stopped at once, not one after the other.
        computes = self.compute_names()
        for group in ([n for n in self.daemons if n not in computes], computes):
            threads = [
                threading.Thread(target=self._stop_one, args=(name, codes)) for name in group
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        steps: list[tuple[str, Callable[[], None]]] = []
        if self.proxy is not None:
            steps.append(("the proxy", self.proxy.stop))
        if self.placement is not None:
            placement = self.placement

            def keep_log() -> None:
                # NOTE: Placement's directory goes with it; its log may be
                # needed to follow a violation.
                if placement.log_path and os.path.exists(placement.log_path):
                    shutil.copy(placement.log_path, self.workdir / "placement.log")

            steps.append(("Placement's log", keep_log))
            steps.append(("Placement", self.placement.stop))
        if self.db is not None:
            steps.append(("the database engine", self.db.dispose))
        if self.scratch is not None:
            steps.append(("the scratch database", self.scratch.drop))
        steps.append(("the virtual host", self.vhost.delete))
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - keep cleaning up
                print(f"chaos soak: cleaning up {what} failed: {exc}", file=sys.stderr)
        self.proxy = self.placement = self.db = self.scratch = None
        return codes
