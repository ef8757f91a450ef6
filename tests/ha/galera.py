"""A MariaDB Galera cluster of our own on loopback: nodes, bootstrap, SST, node faults.

See :mod:`tests.ha.cluster` for how the HA run uses it, and why the SST
method is our own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import pwd
import re
import shutil
import signal
import subprocess
import time
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
        self.mariadbd = find_tool("mariadbd", "/usr/sbin", "/usr/libexec")
        self.install_db = find_tool("mariadb-install-db", "/usr/bin", "/usr/scripts")
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
        sst_rsync = find_tool("wsrep_sst_rsync", "/usr/bin")
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
            clear_dir(self.workdir)

    def __enter__(self) -> GaleraCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
