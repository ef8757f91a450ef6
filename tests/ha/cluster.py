"""Clusters of our own on loopback, and the faults the HA run injects.

:class:`RabbitCluster`
    RabbitMQ nodes ``rs_ha_<n>_<tag>@localhost``, each its own Erlang VM
    with its own ports, data and log directories, all sharing a cookie
    under the cluster's own ``HOME``; node 2..n join node 1. The system's
    broker and its epmd are left alone (our nodes register with the epmd
    already running, under names nobody else uses).
:class:`GaleraCluster`
    ``mariadbd`` processes with the Galera 4 provider, each with its own
    port, Galera ports (group communication, IST, SST), data directory and
    defaults file; node 1 is bootstrapped, the others join by rsync SST.
:class:`FailoverProxy`
    A TCP proxy that sends each new connection to the first backend in its
    list that accepts, as HAProxy does with ``backup`` servers.

Every process runs in its own session (process group) so that
:meth:`~RabbitCluster.close` can end it and whatever it started. Nothing
here needs the network beyond 127.0.0.1.

NOTE: rsync's daemon, started by root (the SST script on the joiner), drops
to the "nobody" user and then cannot write the joiner's data directory.
The nodes therefore use an SST method of our own, ``rsync_asroot``: a
script in the cluster's ``bin`` directory that runs the stock
``wsrep_sst_rsync`` with an ``rsync`` first in ``PATH`` that keeps the
daemon's user (``--dparam=uid=...``). The transfer itself is the stock
rsync SST. As any other user nothing changes: rsync's daemon does not
switch users when not started by root.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pathlib
import pwd
import random
import re
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

from tests.harness import end_process, tail

#: How long a node gets to start (or stop) before :class:`ClusterError`.
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0


class ClusterError(Exception):
    """A node did not start, join or stop in time; names it and its log."""


#: Lines of a node's log an error message quotes.
LOG_LINES = 30


#: Where :func:`free_ports` looks: below Linux's ephemeral range (32768 and
#: up by default), so that no outgoing connection's local port takes one of
#: ours between the pick and a node's (re)start.
PORT_RANGE = (20000, 32000)


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 now, from :data:`PORT_RANGE`."""
    picked: list[int] = []
    candidates = random.sample(
        range(*PORT_RANGE), min(20 * count + 200, PORT_RANGE[1] - PORT_RANGE[0])
    )
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        picked.append(port)
        if len(picked) == count:
            return picked
    raise ClusterError(f"no {count} free ports in {PORT_RANGE}")


def _tool(name: str, *dirs: str) -> str:
    for directory in dirs:
        candidate = pathlib.Path(directory, name)
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise ClusterError(f"{name} is not installed (looked in {', '.join(dirs) or 'PATH'})")
    return found


def _clear(workdir: pathlib.Path) -> None:
    if not workdir.exists():
        return
    for child in workdir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()


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
        self.server = _tool("rabbitmq-server", *_RABBIT_BIN)
        self.ctl = _tool("rabbitmqctl", *_RABBIT_BIN)
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
            _clear(self.workdir)

    def __enter__(self) -> RabbitCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------
# MariaDB Galera
# --------------------------------------------------------------------------

#: Our SST method (see the module's NOTE): the stock rsync one, as root.
SST_METHOD = "rsync_asroot"
_GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
#: The nodes run as whoever runs us (root in CI).
_USER = pwd.getpwuid(os.getuid()).pw_name
_RECOVERED = re.compile(r"WSREP: Recovered position:\s*(\S+:-?\d+)")


@dataclasses.dataclass(eq=False)
class GaleraNode:
    """One ``mariadbd`` of a :class:`GaleraCluster`."""

    index: int
    port: int
    base_port: int
    ist_port: int
    sst_port: int
    directory: pathlib.Path
    process: subprocess.Popen | None = None
    #: How :meth:`GaleraCluster.rejoin` last caught the node up: "IST" (the
    #: missed write sets from a survivor's gcache), "SST" (a full copy of a
    #: survivor's data directory) or "none".
    last_transfer: str | None = None

    @property
    def datadir(self) -> pathlib.Path:
        return self.directory / "data"

    @property
    def log(self) -> pathlib.Path:
        """The server's error log (``log-error``)."""
        return self.directory / "error.log"

    @property
    def defaults_file(self) -> pathlib.Path:
        return self.directory / "my.cnf"

    @property
    def socket(self) -> pathlib.Path:
        return self.directory / "mysqld.sock"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        """The ``mariadbd`` process id, if running."""
        return self.process.pid if self.alive and self.process else None

    def __str__(self) -> str:
        return f"galera{self.index}(:{self.port})"


class GaleraCluster:
    """A MariaDB Galera cluster of ``size`` nodes on loopback, under ``workdir``.

    ``root`` connects over TCP to 127.0.0.1 without a password; the
    database ``test`` exists.
    """

    def __init__(self, workdir: pathlib.Path, size: int = 3, name: str = "rs_ha") -> None:
        self.workdir = pathlib.Path(workdir)
        self.size = size
        self.name = name
        self.bin_dir = self.workdir / "bin"
        self.mariadbd = _tool("mariadbd", "/usr/sbin", "/usr/libexec")
        self.install_db = _tool("mariadb-install-db", "/usr/bin", "/usr/scripts")
        ports = free_ports(4 * size)
        self.nodes: list[GaleraNode] = [
            GaleraNode(
                index=i,
                port=ports[4 * (i - 1)],
                base_port=ports[4 * (i - 1) + 1],
                ist_port=ports[4 * (i - 1) + 2],
                sst_port=ports[4 * (i - 1) + 3],
                directory=self.workdir / f"galera{i}",
            )
            for i in range(1, size + 1)
        ]
        self._closed = False
        #: Seconds the last :meth:`start` took.
        self.started_in: float | None = None

    # -- set-up ------------------------------------------------------------

    def _prepare(self) -> None:
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        rsync = shutil.which("rsync") or "/usr/bin/rsync"
        wrapper = self.bin_dir / "rsync"
        wrapper.write_text(
            "#!/bin/sh\n"
            "# rsync's daemon drops to 'nobody' when root starts it: keep our user.\n"
            'if [ "$1" = "--daemon" ]; then\n'
            f'    exec {rsync} --dparam=uid="$(id -u)" --dparam=gid="$(id -g)" "$@"\n'
            "fi\n"
            f'exec {rsync} "$@"\n'
        )
        sst_rsync = _tool("wsrep_sst_rsync", "/usr/bin")
        method = self.bin_dir / f"wsrep_sst_{SST_METHOD}"
        method.write_text(
            f'#!/bin/sh\nPATH="{self.bin_dir}:$PATH"; export PATH\nexec {sst_rsync} "$@"\n'
        )
        for script in (wrapper, method):
            script.chmod(0o755)
        gcomm = ",".join(f"127.0.0.1:{n.base_port}" for n in self.nodes)
        for node in self.nodes:
            node.datadir.mkdir(parents=True, exist_ok=True)
            provider_options = ";".join(
                (
                    f"base_port={node.base_port}",
                    f"ist.recv_addr=127.0.0.1:{node.ist_port}",
                    "gcache.size=128M",
                    "pc.wait_prim=yes",
                )
            )
            node.defaults_file.write_text(
                "[client]\n"
                f"socket={node.socket}\n"
                "[mariadbd]\n"
                f"user={_USER}\n"
                f"datadir={node.datadir}\n"
                f"socket={node.socket}\n"
                f"pid-file={node.directory / 'mysqld.pid'}\n"
                f"log-error={node.log}\n"
                f"port={node.port}\n"
                "bind-address=127.0.0.1\n"
                "skip-name-resolve\n"
                "innodb_buffer_pool_size=64M\n"
                "innodb_log_file_size=48M\n"
                "performance_schema=OFF\n"
                "max_connections=300\n"
                "binlog_format=ROW\n"
                "default_storage_engine=InnoDB\n"
                "innodb_autoinc_lock_mode=2\n"
                "wsrep_on=ON\n"
                f"wsrep_provider={_GALERA_PROVIDER}\n"
                f"wsrep_cluster_name={self.name}\n"
                f"wsrep_node_name=node{node.index}\n"
                f"wsrep_cluster_address=gcomm://{gcomm}\n"
                f"wsrep_node_address=127.0.0.1:{node.base_port}\n"
                f'wsrep_provider_options="{provider_options}"\n'
                f"wsrep_sst_method={SST_METHOD}\n"
                f"wsrep_sst_receive_address=127.0.0.1:{node.sst_port}\n"
            )

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PATH"] = f"{self.bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
        return env

    def _spawn(self, node: GaleraNode, *extra: str) -> None:
        out = open(node.directory / "stdout.log", "ab")  # noqa: SIM115 - the child keeps it
        try:
            node.process = subprocess.Popen(
                [self.mariadbd, f"--defaults-file={node.defaults_file}", *extra],
                env=self._env(),
                cwd=node.directory,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            out.close()

    def connect(self, node: GaleraNode, database: str | None = None, **kwargs: Any) -> Any:
        """A PyMySQL connection to ``node`` as root (autocommit on)."""
        import pymysql

        kwargs.setdefault("connect_timeout", 5)
        kwargs.setdefault("read_timeout", 30)
        kwargs.setdefault("write_timeout", 30)
        kwargs.setdefault("autocommit", True)
        return pymysql.connect(
            host="127.0.0.1", port=node.port, user="root", database=database, **kwargs
        )

    def status(self, node: GaleraNode) -> dict[str, Any]:
        """The node's ``wsrep_%`` status (integers where the value is one).

        Among them: ``wsrep_cluster_size``, ``wsrep_local_state_comment``,
        ``wsrep_ready``, ``wsrep_local_cert_failures``, ``wsrep_local_bf_aborts``.
        """
        conn = self.connect(node)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL STATUS LIKE 'wsrep%%'")
                rows = cur.fetchall()
        finally:
            conn.close()
        status: dict[str, Any] = {}
        for key, value in rows:
            status[key] = int(value) if re.fullmatch(r"-?\d+", value or "") else value
        return status

    def _await_synced(self, node: GaleraNode, size: int, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        last: Any = "no answer"
        while True:
            if not node.alive:
                raise ClusterError(
                    f"{node} exited (status {node.process.poll() if node.process else None})\n"
                    f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
                )
            try:
                st = self.status(node)
                last = {k: st.get(k) for k in ("wsrep_cluster_size", "wsrep_local_state_comment")}
                if (
                    st.get("wsrep_local_state_comment") == "Synced"
                    and st.get("wsrep_cluster_size") == size
                    and st.get("wsrep_ready") == "ON"
                ):
                    return
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = exc
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{node} not Synced in a cluster of {size} after {timeout}s (last: {last})\n"
                    f"--- {node.log}:\n{tail(node.log, LOG_LINES)}"
                )
            time.sleep(0.5)

    def start(self) -> None:
        """Bootstrap node 1, then join the others one by one (rsync SST)."""
        self._closed = False
        started = time.monotonic()
        self._prepare()
        first = self.nodes[0]
        if not (first.datadir / "mysql").is_dir():
            result = subprocess.run(
                [
                    self.install_db,
                    f"--defaults-file={first.defaults_file}",
                    f"--user={_USER}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ],
                capture_output=True,
                text=True,
                timeout=START_TIMEOUT,
                env=self._env(),
            )
            if result.returncode != 0:
                raise ClusterError(
                    f"mariadb-install-db for {first} exited {result.returncode}: "
                    f"{result.stdout[-2000:]}{result.stderr[-2000:]}"
                )
        self._spawn(first, "--wsrep-new-cluster")
        self._await_synced(first, 1)
        conn = self.connect(first)
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS test")
        finally:
            conn.close()
        for count, node in enumerate(self.nodes[1:], start=2):
            self._spawn(node)
            self._await_synced(node, count)
        for node in self.nodes:
            self._await_synced(node, self.size)
        self.started_in = time.monotonic() - started

    # -- what clients need -----------------------------------------------

    def url(self, node: GaleraNode, database: str = "test", port: int | None = None) -> str:
        """The SQLAlchemy URL of ``node`` (or of a proxy on ``port``)."""
        return f"mysql+pymysql://root@127.0.0.1:{port or node.port}/{database}"

    def _any_synced(self) -> GaleraNode:
        for node in self.nodes:
            if node.alive:
                with contextlib.suppress(Exception):
                    if self.status(node).get("wsrep_local_state_comment") == "Synced":
                        return node
        raise ClusterError("no Galera node is Synced")

    def execute(self, node: GaleraNode | None, sql: str, *args: Any) -> list[tuple]:
        """Run one statement on ``node`` (None: any Synced one); its rows."""
        conn = self.connect(node or self._any_synced())
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args or None)
                return list(cur.fetchall())
        finally:
            conn.close()

    def create_database(self, name: str) -> None:
        """``CREATE DATABASE`` (replicated to every node)."""
        self.execute(None, f"CREATE DATABASE IF NOT EXISTS `{name}`")

    def drop_database(self, name: str) -> None:
        self.execute(None, f"DROP DATABASE IF EXISTS `{name}`")

    # -- faults --------------------------------------------------------------

    def kill(self, node: GaleraNode) -> None:
        """SIGKILL ``node``'s ``mariadbd`` (a crash: its grastate seqno stays -1)."""
        if node.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait(10)

    def _recovered_position(self, node: GaleraNode) -> str | None:
        """The position a crashed node's InnoDB holds (``--wsrep-recover``)."""
        try:
            grastate = (node.datadir / "grastate.dat").read_text()
        except OSError:
            return None
        if not re.search(r"^seqno:\s+-1\s*$", grastate, re.M):
            return None
        log = node.directory / "recover.log"
        with contextlib.suppress(OSError):
            log.unlink()
        subprocess.run(
            [
                self.mariadbd,
                f"--defaults-file={node.defaults_file}",
                "--wsrep-recover",
                f"--log-error={log}",
            ],
            env=self._env(),
            cwd=node.directory,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=START_TIMEOUT,
            check=False,
        )
        found = _RECOVERED.findall(tail(log, 200))
        if not found or found[-1].endswith(":-1"):
            return None
        return found[-1]

    def rejoin(self, node: GaleraNode, timeout: float = START_TIMEOUT) -> float:
        """Start a killed or stopped ``node`` again; the seconds until Synced.

        A crashed node's position is recovered from InnoDB first, so that
        it can catch up by IST from a survivor's gcache rather than by a
        full SST; :attr:`GaleraNode.last_transfer` says which happened.
        """
        started = time.monotonic()
        if node.alive:
            raise ClusterError(f"{node} is still running")
        extra = []
        position = self._recovered_position(node)
        if position:
            extra.append(f"--wsrep_start_position={position}")
        offset = node.log.stat().st_size if node.log.exists() else 0
        self._spawn(node, *extra)
        self._await_synced(node, sum(1 for n in self.nodes if n.alive), timeout)
        with open(node.log, errors="replace") as log:
            log.seek(offset)
            text = log.read()
        # The SST script runs for an IST too ("bypass"); it names which.
        transfer = re.findall(r"rsync (IST|SST) completed on joiner", text)
        if transfer:
            node.last_transfer = transfer[-1]
        else:
            node.last_transfer = "IST" if "IST received" in text else "none"
        return time.monotonic() - started

    def stop(self, node: GaleraNode) -> None:
        """Stop ``node`` cleanly (SIGTERM; SIGKILL after 20 s)."""
        if node.alive and node.process is not None:
            node.process.terminate()
        end_process(node.process, STOP_TIMEOUT)

    def close(self, keep_files: bool = False) -> None:
        """Stop every node (SIGKILL after 20 s) and empty ``workdir``.

        :param keep_files: leave ``workdir`` as it is (logs to look at).
        """
        if self._closed:
            return
        self._closed = True
        for node in self.nodes:
            if node.alive and node.process is not None:
                node.process.terminate()
        for node in self.nodes:
            end_process(node.process, STOP_TIMEOUT)
        if not keep_files:
            _clear(self.workdir)

    def __enter__(self) -> GaleraCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------
# The failover proxy
# --------------------------------------------------------------------------


class FailoverProxy:
    """A tiny TCP proxy (a thread per connection pair), like HAProxy with
    ``backup`` servers.

    Each new client connection goes to the first backend ``(host, port)`` in
    the ordered list that accepts a TCP connection. When a backend dies (its
    end closes or resets), the pair is cut: both sides are closed, and the
    client reconnects, to the next backend that accepts. Health is TCP only:
    a Galera node that accepts but is not Synced still gets connections.
    """

    def __init__(
        self,
        backends: list[tuple[str, int]],
        listen_port: int | None = None,
        connect_timeout: float = 1.0,
    ) -> None:
        self.backends = list(backends)
        self.connect_timeout = connect_timeout
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", listen_port or 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._total: dict[tuple[str, int], int] = {b: 0 for b in self.backends}
        self._active: dict[tuple[str, int], set[tuple[socket.socket, socket.socket]]] = {
            b: set() for b in self.backends
        }
        #: Client connections refused because no backend accepted.
        self.refused = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def connections_by_backend(self) -> dict[tuple[str, int], int]:
        """Connections each backend was given since :meth:`start`."""
        with self._lock:
            return dict(self._total)

    @property
    def active_by_backend(self) -> dict[tuple[str, int], int]:
        """Connections open to each backend now."""
        with self._lock:
            return {b: len(pairs) for b, pairs in self._active.items()}

    def start(self) -> None:
        self._listener.listen(128)
        self._thread = threading.Thread(
            target=self._accept_loop, name="failover-proxy", daemon=True
        )
        self._thread.start()

    def _pick(self) -> tuple[tuple[str, int], socket.socket] | None:
        for backend in self.backends:
            try:
                upstream = socket.create_connection(backend, timeout=self.connect_timeout)
            except OSError:
                continue
            upstream.settimeout(None)
            return backend, upstream
        return None

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            picked = self._pick()
            if picked is None:
                self.refused += 1
                client.close()
                continue
            backend, upstream = picked
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = (client, upstream)
            with self._lock:
                self._total[backend] += 1
                self._active[backend].add(pair)
            threading.Thread(
                target=self._pump, args=(backend, pair), name=f"proxy-{backend[1]}", daemon=True
            ).start()

    def _pump(self, backend: tuple[str, int], pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        peer = {client: upstream, upstream: client}
        sel = selectors.DefaultSelector()
        try:
            for sock in pair:
                sel.register(sock, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in sel.select(timeout=0.5):
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    peer[key.fileobj].sendall(data)  # type: ignore[index]
        except OSError:
            return
        finally:
            sel.close()
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._active[backend].discard(pair)

    def cut(self, backend: tuple[str, int]) -> int:
        """Close every connection to ``backend`` now; how many were open."""
        with self._lock:
            pairs = list(self._active[backend])
        for pair in pairs:
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        return len(pairs)

    def close(self) -> None:
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        for backend in self.backends:
            self.cut(backend)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FailoverProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def clusters(
    workdir: pathlib.Path, size: int = 3, keep_files: bool = False
) -> Iterator[tuple[RabbitCluster, GaleraCluster]]:
    """Both clusters started side by side under ``workdir``; closed after.

    :param keep_files: leave their directories (logs) after closing.
    """
    rabbit = RabbitCluster(workdir / "rabbit", size)
    galera = GaleraCluster(workdir / "galera", size)
    try:
        errors: list[BaseException] = []

        def _start_rabbit() -> None:
            try:
                rabbit.start()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        starter = threading.Thread(target=_start_rabbit, name="rabbit-start")
        starter.start()
        try:
            galera.start()
        finally:
            starter.join()
        if errors:
            raise errors[0]
        yield rabbit, galera
    finally:
        rabbit.close(keep_files)
        galera.close(keep_files)
