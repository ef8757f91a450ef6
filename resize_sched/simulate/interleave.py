"""The concurrency model: worker threads that take turns, in a seeded order.

Each worker is a real thread running the real task flows, but only one of
them runs at a time. A worker gives up its turn just before each of its
Placement requests (and when it waits in VERIFY_RESIZE); the next to run is
drawn from the seeded generator among the workers waiting, itself included.
Resizes in flight therefore interleave at every Placement request (between a
drop and the query after it, between a query and its claim, during a
VERIFY_RESIZE window), as racing conductors do, and the order is the same
for the same seed: the run is reproducible, counts included.

What is not interleaved: a thread the code under test starts itself (the
side pool that writes ``legacy``'s prepare beside the scheduler's query)
runs beside the worker that started it; its write hands ``old`` from the
server to the migration and changes no host's usage, so no other worker can
see it. The oracle's and the sweep's clients take no turns: a snapshot is
taken, and a sweep runs, within one turn.

The interleaver also keeps the log of allocation writes that landed, by
worker, so a resize can tell whether any other worker wrote between two
points of its own (it was *contended*).
"""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

from resize_sched.placement.client import PlacementClient

_WRITES = frozenset({"PUT", "POST", "DELETE"})


class Interleaver:
    """Runs registered worker threads one at a time.

    :param rng: draws the next worker at every turn.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._lock = threading.Lock()
        self._local = threading.local()
        self._expected: set[str] = set()
        self._wake: dict[str, threading.Event] = {}
        self._hooks: dict[str, Callable[[], None]] = {}
        self._waiting: set[str] = set()
        self._running: str | None = None
        self._started = False
        #: one worker name per allocation write that landed, in order
        self.writes: list[str] = []
        #: turns handed out
        self.turns = 0

    # -- workers -------------------------------------------------------------------

    def expect(self, name: str) -> None:
        """Announce a worker before any starts, so the first turn waits for it."""
        with self._lock:
            self._expected.add(name)
            self._wake[name] = threading.Event()

    @contextlib.contextmanager
    def worker(self, name: str) -> Iterator[None]:
        """Run the block as the worker ``name``: from its first turn to its end."""
        self._local.name = name
        with self._lock:
            self._waiting.add(name)
            self._maybe_start()
        self._wait_for(name)
        try:
            yield
        finally:
            with self._lock:
                self._expected.discard(name)
                self._running = None
                self._hand_over()
            self._local.name = None

    def turn(self) -> None:
        """Give up the turn; return when drawn again (a no-op outside a worker)."""
        name = getattr(self._local, "name", None)
        if name is None:
            return
        with self._lock:
            self._waiting.add(name)
            self._running = None
            self._hand_over()
        self._wait_for(name)
        hook = self._hooks.pop(name, None)
        if hook is not None:
            hook()

    def at_next_turn(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` once, at the start of the calling worker's next turn,
        before the request it waits to make."""
        name = self.current
        if name is not None:
            self._hooks[name] = hook

    @property
    def current(self) -> str | None:
        """The calling thread's worker name (None outside a worker)."""
        return getattr(self._local, "name", None)

    def _maybe_start(self) -> None:
        if not self._started and self._waiting >= self._expected:
            self._started = True
            self._hand_over()

    def _hand_over(self) -> None:
        # NOTE: called with the lock held and nobody running, so every
        # worker still alive is waiting: the draw sees all of them.
        if not self._started or not self._waiting:
            return
        chosen = self._rng.choice(sorted(self._waiting))
        self._waiting.discard(chosen)
        self._running = chosen
        self.turns += 1
        self._wake[chosen].set()

    def _wait_for(self, name: str) -> None:
        wake = self._wake[name]
        wake.wait()
        wake.clear()

    # -- clients ---------------------------------------------------------------------

    def attach(self, client: PlacementClient, *, gated: bool) -> PlacementClient:
        """Count ``client``'s allocation writes in :attr:`writes`; with ``gated``,
        its requests also wait for their turn.

        Wraps the client's one request method (an instance attribute shadows
        the method). Returns ``client``.
        """
        original = client._request

        def request(method: str, path: str, version: Any, **kwargs: Any) -> Any:
            if gated:
                self.turn()
            response = original(method, path, version, **kwargs)
            name = self.current
            # NOTE: a write from a thread outside every worker is legacy's
            # prepare on the side pool, which changes no usage (module doc).
            if name is not None and method in _WRITES and path.startswith("/allocations"):
                with self._lock:
                    self.writes.append(name)
            return response

        client._request = request  # type: ignore[method-assign]
        return client

    def contended(self, name: str, since: int, until: int | None = None) -> bool:
        """Whether anyone but ``name`` wrote between two positions of :attr:`writes`."""
        with self._lock:
            return any(writer != name for writer in self.writes[since:until])

    def position(self) -> int:
        """The current end of :attr:`writes`."""
        with self._lock:
            return len(self.writes)
