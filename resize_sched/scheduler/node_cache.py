"""The compute node rows a scheduler has read, kept for a bounded time.

Every scheduling request needs, for each of Placement's candidates, the row
its compute service reported (host name, hypervisor, failed builds) and the
service's flags and last heartbeat (:class:`~resize_sched.db.host_api.NodeRow`).
Those rows change rarely: a heartbeat every ``report_interval``, a flag when
an operator acts. Reading them again for every request is most of the
scheduler's database time on a large cloud (1,000 candidates a request, the
``[scheduler] max_placement_results`` default).

:class:`NodeCache` keeps each row it read for at most ``[scheduler]
compute_node_cache_seconds``. A request reads, in one statement, only the
candidates it holds no fresh row for; a provider with no compute node yet is
never remembered (it is looked for again next time). What that costs, and
what it does not:

* the capacity and usage the scheduler weighs are never cached: they come
  from Placement's answer to the same request;
* a disabled service is left out by Placement itself (the
  ``COMPUTE_STATUS_DISABLED`` trait that ``os-services`` sets with the flag),
  so it is never chosen from a stale row;
* a service forced down, or one that stopped reporting, is seen by the
  ``ComputeFilter`` at most that many seconds late, on top of the
  ``service_down_time`` its heartbeats already allow;
* the other way round, never late: a row that would keep its host out (a
  service forced down or disabled, or a heartbeat that is, or would become
  within the row's time in the cache, older than ``service_down_time``) is
  not served from the cache but read again, so a host that is back is seen
  at the next request;
* a resize's source is always read fresh
  (:func:`resize_sched.db.host_api.compute_node_for_source`).

``0`` turns the cache off: every request reads every candidate's row.
"""

import datetime
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from resize_sched.db.host_api import NodeRow


class NodeCache:
    """Compute node rows by provider uuid, each kept ``max_age`` seconds.

    :param db: what reads the rows (``host_state_nodes``).
    :param max_age: seconds a row is used after it was read; 0: never.
    :param down_time: the ``service_down_time`` in force (read at each
        request): a row whose heartbeat could be older than that while it
        is cached is read again.
    :param clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        db: Any,
        max_age: float,
        down_time: Callable[[], float] = lambda: 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db = db
        self.max_age = max_age
        self.down_time = down_time
        self.clock = clock
        self._lock = threading.Lock()
        #: uuid -> (row, when read, whether it holds the inventory)
        self._rows: dict[str, tuple[NodeRow, float, bool]] = {}
        self._swept = clock()

    def nodes(self, uuids: Iterable[str], *, inventory: bool = False) -> dict[str, NodeRow]:
        """The compute node of each provider that has one.

        :param inventory: the rows must carry their inventories (a row
            cached without one is read again).
        :returns: provider uuid -> row; providers with no compute node are absent.
        """
        wanted = list(uuids)
        if self.max_age <= 0:
            found: dict[str, NodeRow] = self.db.host_state_nodes(wanted, inventory=inventory)
            return found
        now = self.clock()
        oldest = now - self.max_age
        # NOTE: a heartbeat older than this may make the row say "down"
        # before the row leaves the cache: such a row is read again.
        beat_after = datetime.datetime.now(datetime.UTC) - datetime.timedelta(
            seconds=self.down_time() - self.max_age
        )
        out: dict[str, NodeRow] = {}
        missing: list[str] = []
        rows = self._rows
        with self._lock:
            for uuid in wanted:
                entry = rows.get(uuid)
                if (
                    entry is not None
                    and entry[1] > oldest
                    and (entry[2] or not inventory)
                    and _lets_in(entry[0], beat_after)
                ):
                    out[uuid] = entry[0]
                else:
                    missing.append(uuid)
        if not missing:
            return out
        # NOTE: read outside the lock: two requests missing the same row
        # both read it, and the later one's copy is kept; neither waits.
        found = self.db.host_state_nodes(missing, inventory=inventory)
        read_at = self.clock()
        with self._lock:
            for uuid, row in found.items():
                rows[uuid] = (row, read_at, inventory)
            if read_at - self._swept > self.max_age:
                self._sweep(read_at - self.max_age)
                self._swept = read_at
        out.update(found)
        return out

    def _sweep(self, oldest: float) -> None:
        """Forget rows older than ``oldest`` (providers gone, hosts no
        longer asked about), so the cache holds at most what one
        ``max_age`` read. The caller holds the lock."""
        stale = [uuid for uuid, entry in self._rows.items() if entry[1] <= oldest]
        for uuid in stale:
            del self._rows[uuid]

    def forget(self, uuid: str) -> None:
        """Drop one provider's row, so the next request reads it."""
        with self._lock:
            self._rows.pop(uuid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)


def _lets_in(row: NodeRow, beat_after: datetime.datetime) -> bool:
    """Whether ``row`` says its host may take work (so serving it from the
    cache can only let a host in late, never keep one out): not forced
    down, not disabled, a heartbeat after ``beat_after``."""
    if row.forced_down or row.disabled or row.last_seen_up is None:
        return False
    seen = row.last_seen_up
    if seen.tzinfo is None:
        seen = seen.replace(tzinfo=datetime.UTC)
    return seen > beat_after


__all__ = ["NodeCache"]
