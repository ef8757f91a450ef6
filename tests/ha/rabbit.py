"""A RabbitMQ cluster of our own on loopback: nodes, clustering, queues, node faults.

See :mod:`tests.ha.cluster` for how the HA run uses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import secrets
import signal
import subprocess
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from tests.ha.nodes import (
    LOG_LINES,
    START_TIMEOUT,
    STOP_TIMEOUT,
    ClusterError,
    clear_dir,
    find_tool,
    free_ports,
)
from tests.harness import end_process, tail

# --------------------------------------------------------------------------
# RabbitMQ
# --------------------------------------------------------------------------

_RABBIT_BIN = ("/usr/lib/rabbitmq/bin",)


@dataclasses.dataclass(eq=False)
class RabbitNode:
    """One node of a :class:`RabbitCluster`."""

    index: int
    name: str
    amqp_port: int
    dist_port: int
    directory: pathlib.Path
    process: subprocess.Popen | None = None
    #: False between :meth:`RabbitCluster.stop_app` and ``start_app``.
    app_running: bool = False

    @property
    def log(self) -> pathlib.Path:
        """The node's own log file."""
        return self.directory / "log" / f"{self.name}.log"

    @property
    def stdout(self) -> pathlib.Path:
        """What ``rabbitmq-server`` wrote to its standard output and error."""
        return self.directory / "stdout.log"

    @property
    def alive(self) -> bool:
        """True while the node's start script (and so its VM) runs."""
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        """The process id of the node's Erlang VM (``beam.smp``), if running.

        The VM of a node runs in the session its start script opened (the
        node name is not on its command line: RabbitMQ sets it at boot).
        """
        if not self.alive or self.process is None:
            return None
        for proc in pathlib.Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text()
                argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0]
            except OSError:
                continue
            # pid (comm) state ppid pgrp session ...: comm may hold spaces.
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[3]) == self.process.pid and argv0.endswith(b"beam.smp"):
                return int(proc.name)
        return None
        for proc in pathlib.Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            names = {self.name.encode(), self.name.split("@")[0].encode()}
            if args and args[0].endswith(b"beam.smp") and names & set(args):
                return int(proc.name)
        return None

    def __str__(self) -> str:
        return self.name


class RabbitCluster:
    """A RabbitMQ cluster of ``size`` nodes on loopback, under ``workdir``.

    Users: the default ``guest``/``guest`` (allowed from 127.0.0.1).
    Queues are whatever clients declare; quorum queues have one member
    on each node.
    """

    def __init__(self, workdir: pathlib.Path, size: int = 3, tag: str | None = None) -> None:
        self.workdir = pathlib.Path(workdir)
        self.size = size
        self.tag = tag or secrets.token_hex(2)
        self.home = self.workdir / "home"
        self.server = find_tool("rabbitmq-server", *_RABBIT_BIN)
        self.ctl = find_tool("rabbitmqctl", *_RABBIT_BIN)
        ports = free_ports(2 * size)
        self.nodes: list[RabbitNode] = [
            RabbitNode(
                index=i,
                name=f"rs_ha_{i}_{self.tag}@localhost",
                amqp_port=ports[2 * (i - 1)],
                dist_port=ports[2 * (i - 1) + 1],
                directory=self.workdir / f"rabbit{i}",
            )
            for i in range(1, size + 1)
        ]
        self._closed = False
        #: Seconds the last :meth:`start` took.
        self.started_in: float | None = None

    # -- set-up ------------------------------------------------------------

    def _prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        cookie = self.home / ".erlang.cookie"
        if not cookie.exists():
            cookie.write_text(secrets.token_hex(16).upper())
            cookie.chmod(0o400)
        for node in self.nodes:
            for sub in ("mnesia", "log"):
                (node.directory / sub).mkdir(parents=True, exist_ok=True)
            (node.directory / "rabbitmq.conf").write_text(
                f"listeners.tcp.default = 127.0.0.1:{node.amqp_port}\n"
                # A single loopback machine: the disk is shared, keep the
                # alarm away; the memory one too (several brokers on 2 GB).
                "disk_free_limit.absolute = 50MB\n"
                "vm_memory_high_watermark.absolute = 512MB\n"
                "log.console = false\n"
                "log.file.level = info\n"
                # A node booting with an empty database joins node 1 (the
                # others start only once node 1 runs: see start()).
                "cluster_formation.peer_discovery_backend = classic_config\n"
                f"cluster_formation.classic_config.nodes.1 = {self.nodes[0].name}\n"
            )
            (node.directory / "enabled_plugins").write_text("[].\n")

    def _env(self, node: RabbitNode | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env["HOME"] = str(self.home)
        if node is not None:
            env.update(
                RABBITMQ_NODENAME=node.name,
                RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
                RABBITMQ_NODE_PORT=str(node.amqp_port),
                RABBITMQ_DIST_PORT=str(node.dist_port),
                RABBITMQ_MNESIA_BASE=str(node.directory / "mnesia"),
                RABBITMQ_LOG_BASE=str(node.directory / "log"),
                RABBITMQ_CONFIG_FILE=str(node.directory / "rabbitmq.conf"),
                RABBITMQ_ENABLED_PLUGINS_FILE=str(node.directory / "enabled_plugins"),
                RABBITMQ_PID_FILE=str(node.directory / "pid"),
                RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="+S 1:1 +A 4",
            )
        return env

    def ctl_run(
        self, node: RabbitNode, *args: str, timeout: float = 60.0, check: bool = True
    ) -> subprocess.CompletedProcess:
        """Run ``rabbitmqctl -n NODE ARGS``; :class:`ClusterError` if it fails."""
        cmd = [self.ctl, "-q", "-n", node.name, *args]
        try:
            result = subprocess.run(
                cmd,
                env=self._env(),
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(
                f"{node}: 'rabbitmqctl {' '.join(args)}' took over {timeout}s"
            ) from exc
        if check and result.returncode != 0:
            raise ClusterError(
                f"{node}: 'rabbitmqctl {' '.join(args)}' exited {result.returncode}: "
                f"{result.stderr.strip() or result.stdout.strip()}\n"
                f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
            )
        return result

    def _spawn(self, node: RabbitNode) -> None:
        if node.alive:
            return
        self._prepare()
        out = open(node.stdout, "ab")  # noqa: SIM115 - the child keeps it
        try:
            node.process = subprocess.Popen(
                [self.server],
                env=self._env(node),
                cwd=node.directory,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            out.close()

    def _waiter(self, node: RabbitNode, timeout: float) -> subprocess.Popen:
        return subprocess.Popen(
            [self.ctl, "-q", "-n", node.name, "await_startup", "--timeout", str(int(timeout))],
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _await_startup(self, nodes: Sequence[RabbitNode], timeout: float = START_TIMEOUT) -> None:
        """Wait until every node in ``nodes`` has booted (``await_startup``).

        ``await_startup`` gives up at once on a node not yet registered with
        epmd; it is run again until the node answers or ``timeout`` passes.
        """
        deadline = time.monotonic() + timeout
        waiters = {node: self._waiter(node, timeout) for node in nodes}
        try:
            while waiters:
                for node, waiter in list(waiters.items()):
                    if not node.alive:
                        raise ClusterError(
                            f"{node} exited while starting (status {node.process.poll()})\n"
                            f"--- {node.stdout}:\n{tail(node.stdout, 15)}\n"
                            f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
                        )
                    if waiter.poll() is None:
                        continue
                    output = waiter.stdout.read() if waiter.stdout else ""
                    if waiter.returncode != 0 and time.monotonic() < deadline:
                        time.sleep(0.5)
                        waiters[node] = self._waiter(node, deadline - time.monotonic())
                        continue
                    del waiters[node]
                    if waiter.returncode != 0:
                        raise ClusterError(
                            f"{node} did not start: {output.strip()}\n"
                            f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
                        )
                    node.app_running = True
                if time.monotonic() > deadline:
                    node = next(iter(waiters))
                    raise ClusterError(
                        f"{node} did not start in {timeout}s\n"
                        f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
                    )
                time.sleep(0.2)
        finally:
            for waiter in waiters.values():
                waiter.kill()
                waiter.wait()

    def cluster_status(self, node: RabbitNode | None = None) -> dict[str, Any]:
        """``rabbitmqctl cluster_status`` (JSON) as seen from ``node``."""
        node = node or self._any_running()
        result = self.ctl_run(node, "cluster_status", "--formatter", "json")
        return json.loads(result.stdout)

    def _await_clustered(
        self,
        expected: Sequence[RabbitNode],
        via: RabbitNode | None = None,
        timeout: float = START_TIMEOUT,
    ) -> None:
        """Wait until ``via`` (default: the last of ``expected``) sees exactly
        ``expected`` running (``cluster_status``'s ``running_nodes``)."""
        want = {n.name for n in expected}
        via = via or expected[-1]
        deadline = time.monotonic() + timeout
        seen: Any = None
        while True:
            try:
                seen = set(self.cluster_status(via).get("running_nodes", ()))
                if seen == want:
                    return
            except ClusterError as exc:
                seen = exc
            if time.monotonic() > deadline:
                raise ClusterError(f"running nodes never became {sorted(want)}; last: {seen}")
            time.sleep(1)

    def start(self) -> None:
        """Start node 1, then nodes 2..n together, clustered with node 1.

        A node's first boot joins node 1 by itself (classic config peer
        discovery), which spares three ``rabbitmqctl`` calls per node; one
        that did not (a standalone node, say after a stale database) is
        joined with ``stop_app``, ``join_cluster`` and ``start_app``.
        """
        self._closed = False
        started = time.monotonic()
        self._prepare()
        first = self.nodes[0]
        self._spawn(first)
        self._await_startup([first])
        for node in self.nodes[1:]:
            self._spawn(node)
        self._await_startup(self.nodes[1:])
        running = set(self.cluster_status(first).get("running_nodes", ()))
        for node in self.nodes[1:]:
            if node.name not in running:
                self.ctl_run(node, "stop_app")
                self.ctl_run(node, "join_cluster", first.name)
                self.ctl_run(node, "start_app")
        self._await_clustered(self.nodes, via=first)
        self.started_in = time.monotonic() - started

    # -- what clients need -----------------------------------------------

    def transport_url(self, vhost: str = "/") -> str:
        """oslo.messaging's URL naming every node (``rabbit://h1,h2,h3/vhost``)."""
        hosts = ",".join(f"guest:guest@127.0.0.1:{n.amqp_port}" for n in self.nodes)
        return f"rabbit://{hosts}/{urllib.parse.quote(vhost, safe='')}"

    def amqp_urls(self, vhost: str = "/") -> list[str]:
        """One ``amqp://`` URL per node, for kombu's failover list."""
        path = urllib.parse.quote(vhost, safe="")
        return [f"amqp://guest:guest@127.0.0.1:{n.amqp_port}/{path}" for n in self.nodes]

    def _any_running(self) -> RabbitNode:
        for node in self.nodes:
            if node.alive and node.app_running:
                return node
        raise ClusterError("no RabbitMQ node is running")

    def add_vhost(self, name: str) -> None:
        """Create the vhost ``name`` and give ``guest`` every permission on it."""
        node = self._any_running()
        self.ctl_run(node, "add_vhost", name)
        self.ctl_run(node, "set_permissions", "-p", name, "guest", ".*", ".*", ".*")

    def delete_vhost(self, name: str) -> None:
        """Delete the vhost ``name`` and all its queues (missing: no-op)."""
        self.ctl_run(self._any_running(), "delete_vhost", name, check=False)

    def queues(self, vhost: str = "/") -> list[dict[str, Any]]:
        """Each queue of ``vhost``: name, type, messages, consumers, leader, members."""
        result = self.ctl_run(
            self._any_running(),
            "list_queues",
            "-p",
            vhost,
            "name",
            "type",
            "messages",
            "consumers",
            "leader",
            "members",
            "--formatter",
            "json",
        )
        return json.loads(result.stdout or "[]")

    def queue_leader(self, queue: str, vhost: str = "/") -> RabbitNode | None:
        """The node leading quorum queue ``queue`` now (None: unknown or none)."""
        for row in self.queues(vhost):
            if row.get("name") == queue:
                leader = row.get("leader")
                return next((n for n in self.nodes if n.name == leader), None)
        return None

    def running(self) -> list[RabbitNode]:
        """The nodes whose VM runs with the RabbitMQ application started."""
        return [n for n in self.nodes if n.alive and n.app_running]

    # -- faults --------------------------------------------------------------

    def kill(self, node: RabbitNode) -> None:
        """SIGKILL ``node``'s Erlang VM (a crash; epmd drops its name itself)."""
        pid = node.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        node.app_running = False
        end_process(node.process, timeout=10)

    def start_node(self, node: RabbitNode, timeout: float = START_TIMEOUT) -> None:
        """Start a stopped or killed ``node``; wait until it runs, clustered."""
        self._spawn(node)
        self._await_startup([node], timeout)
        self._await_clustered(self.running(), via=node, timeout=timeout)

    def stop_app(self, node: RabbitNode) -> None:
        """``rabbitmqctl stop_app``: the VM stays, the broker leaves."""
        self.ctl_run(node, "stop_app")
        node.app_running = False

    def start_app(self, node: RabbitNode) -> None:
        """``rabbitmqctl start_app``; wait until it is clustered again."""
        self.ctl_run(node, "start_app", timeout=START_TIMEOUT)
        node.app_running = True
        self._await_clustered(self.running(), via=node)

    def _stop_node(self, node: RabbitNode) -> None:
        if node.alive:
            with contextlib.suppress(ClusterError):
                self.ctl_run(node, "stop", timeout=STOP_TIMEOUT, check=False)
        node.app_running = False
        end_process(node.process, timeout=STOP_TIMEOUT)

    def stop_all(self) -> None:
        """Stop every node cleanly (``rabbitmqctl stop``), one after another."""
        for node in self.nodes:
            self._stop_node(node)

    def start_all(self, timeout: float = START_TIMEOUT) -> None:
        """Start every stopped node at once; wait until all run, clustered.

        The nodes must come up together: each waits for the others it last
        saw running (Mnesia) before it finishes booting.
        """
        stopped = [n for n in self.nodes if not n.alive]
        for node in stopped:
            self._spawn(node)
        self._await_startup(stopped, timeout)
        for node in self.nodes:
            if not node.app_running:
                self.ctl_run(node, "start_app", timeout=timeout)
                node.app_running = True
        self._await_clustered(self.nodes, timeout=timeout)

    def close(self, keep_files: bool = False) -> None:
        """Stop every node (SIGKILL after 20 s) and empty ``workdir``.

        :param keep_files: leave ``workdir`` as it is (logs to look at).
        """
        if self._closed:
            return
        self._closed = True
        for node in self.nodes:
            self._stop_node(node)
        if not keep_files:
            clear_dir(self.workdir)

    def __enter__(self) -> RabbitCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ClusterVhost:
    """The :class:`~tests.chaos.stack.Vhost` interface on the RabbitMQ cluster."""

    def __init__(self, rabbit: Any, name: str) -> None:
        self.rabbit = rabbit
        self.name = name
        self.url = ""

    def create(self) -> str:
        self.rabbit.add_vhost(self.name)
        self.url = self.rabbit.transport_url(self.name)
        return self.url

    def consumers(self, queue: str) -> int:
        found = self.rabbit.queues(self.name)
        info = found.get(queue) if isinstance(found, dict) else None
        if info is None and not isinstance(found, dict):
            info = next((q for q in found if q.get("name") == queue), None)
        return int((info or {}).get("consumers", 0))

    def delete(self) -> None:
        """Nothing: the cluster goes as a whole."""
