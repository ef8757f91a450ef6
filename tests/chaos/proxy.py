"""The soak's Placement fault proxy: random faults from a seed, and held writes.

:class:`ChaosProxy` is the functional tests' :class:`FaultProxy` with two
additions. Faults are drawn at random (from the soak's seed) while the
proxy is *armed*, instead of planned by request number; and one more fault,
``hold``, keeps a write back *before* forwarding it, for longer than the
client's time-out, then delivers it to Placement anyway: the client has given
up (and retried) by the time the original lands, which is what a slow
Placement or a congested network does to an allocation write.

The fault kinds and what each does:

``500``, ``503``
    that status with Placement's error JSON; the request is not forwarded
    (503 is one keystoneauth retries).
``reset``
    the connection is reset once the request has been read; not forwarded.
``delay``
    forwarded at once (a write lands), the answer held past the client's
    time-out.
``409``
    Placement's generation conflict, to writes only; not forwarded.
``hold``
    a write only: held past the client's time-out, *then* forwarded (it
    lands late, after the client's retry or after whatever the client did
    next). Its answer goes nowhere.
"""

from __future__ import annotations

import collections
import http.server
import random
import threading
import time

from tests.functional.fixtures.fault_proxy import WRITES, FaultProxy, Seen

#: Every kind the soak injects, in the order the report lists them.
KINDS = ("500", "503", "reset", "delay", "409", "hold")
#: Kinds Placement (or a network) only does to writes.
WRITE_ONLY = ("409", "hold")


class ChaosProxy(FaultProxy):
    """A :class:`FaultProxy` drawing its faults at random while armed.

    :param upstream: the Placement endpoint to forward to.
    :param seed: seeds the draws (request by request, in arrival order).
    :param rate: the chance that one request gets a fault.
    :param delay: how long ``delay`` and ``hold`` keep a request back
        (seconds): longer than the clients' ``[placement] timeout``.
    :param kinds: the kinds to draw from (default: all of :data:`KINDS`).
    :param fault_log: a file to append one line per injected fault to
        (time, request number, method, path, kind), to follow a violation.
    """

    def __init__(
        self,
        upstream: str,
        seed: int,
        rate: float,
        delay: float,
        kinds: tuple[str, ...] = KINDS,
        fault_log: str | None = None,
    ) -> None:
        super().__init__(upstream, delay=delay)
        self.fault_log = fault_log
        unknown = set(kinds) - set(KINDS)
        if unknown or not kinds:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {KINDS}")
        self.rate = rate
        self.kinds = tuple(k for k in KINDS if k in kinds)
        self._rng = random.Random(f"proxy-{seed}")
        self._random_on = False
        #: Faults injected, by kind; only grows (``arm`` does not reset it).
        self.counts: collections.Counter[str] = collections.Counter()
        #: Held writes not yet delivered (the soak waits for none before it checks).
        self.holding = 0
        self._hold_cond = threading.Condition()
        self._local = threading.local()
        #: The last faults injected (for the report's detail).
        self.recent: collections.deque[Seen] = collections.deque(maxlen=50)

    def chaos(self, on: bool) -> None:
        """Start or stop injecting random faults."""
        with self._lock:
            self._random_on = on

    def _draw(self, method: str) -> tuple[int, str | None]:
        """The request's number and its fault (None for most), drawn among the
        kinds that apply to ``method``."""
        with self._lock:
            self._count += 1
            number = self._count
            if not self._random_on or self._rng.random() >= self.rate:
                return number, None
            kinds = [k for k in self.kinds if method in WRITES or k not in WRITE_ONLY]
            if not kinds:
                return number, None
            fault = self._rng.choice(kinds)
            self.counts[fault] += 1
        if fault == "hold":
            # NOTE: counted as held from the draw, so that wait_no_holds
            # never misses a write drawn just before the faults stop.
            with self._hold_cond:
                self.holding += 1
        return number, fault

    def _take(self) -> tuple[int, str | None]:
        # NOTE: the parent's _handle asks for the request's fault here; it
        # was drawn (and counted) before the parent was called.
        return self._local.taken

    def _record(self, seen: Seen, fault: str | None) -> None:
        # NOTE: the parent keeps every request; a 30-minute soak sends
        # hundreds of thousands, so only the last injected ones are kept.
        if fault is not None:
            with self._lock:
                self.recent.append(seen)

    def wait_no_holds(self, timeout: float) -> bool:
        """Wait until every held write has been delivered; whether they were."""
        deadline = time.monotonic() + timeout
        with self._hold_cond:
            while self.holding:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._hold_cond.wait(left)
        return True

    def _handle(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        number, fault = self._draw(method)
        if fault is not None and self.fault_log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
            with self._lock, open(self.fault_log, "a", encoding="utf-8") as log:
                log.write(f"{stamp} #{number} {fault} {method} {path}\n")
        if fault != "hold":
            self._local.taken = (number, fault)
            return super()._handle(handler)
        length = int(handler.headers.get("Content-Length") or 0)
        try:
            body = handler.rfile.read(length) if length else b""
            time.sleep(self.delay)
            status, headers, data = self._forward(method, path, handler.headers, body)
            self._record(Seen(number, method, path, f"hold/{status}"), fault)
            try:
                self._answer(handler, status, headers, data)
            except OSError:
                pass  # the client gave up long ago
        finally:
            with self._hold_cond:
                self.holding -= 1
                self._hold_cond.notify_all()
