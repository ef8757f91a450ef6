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
import pathlib
import selectors
import socket
import threading
from collections.abc import Iterator

from tests.ha.galera import GaleraCluster, GaleraNode
from tests.ha.nodes import (
    PORT_RANGE,
    START_TIMEOUT,
    STOP_TIMEOUT,
    ClusterError,
    free_ports,
)
from tests.ha.rabbit import RabbitCluster, RabbitNode

#: The clusters' pieces, importable from here as before the split.
__all__ = [
    "PORT_RANGE",
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "ClusterError",
    "FailoverProxy",
    "GaleraCluster",
    "GaleraNode",
    "RabbitCluster",
    "RabbitNode",
    "clusters",
    "free_ports",
]

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
