"""One worker's resize cycles, timed and counted: what a row of the benchmark's table measures.

A :class:`ResizeWorker` runs resize cycles (resize, finish, then confirm or
revert in turn) over servers of its own through the real scheduler,
executor and task flows with no RPC in between (the steps are
:class:`~resize_sched.simulate.driver.MoveDriver`'s, as the simulation's),
and counts into a :class:`~figures.Figures`: Placement requests per step,
schedule+claim latency and where it went (inside Placement, our database,
the rest), capacity and generation refusals, errors.
"""

from __future__ import annotations

import cProfile
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from cloud import DatabaseTimer, PlacementTimer
from figures import Figures

from resize_sched import exception
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.context import RequestContext
from resize_sched.placement.client import PlacementClient
from resize_sched.simulate.driver import MoveDriver

#: Attempts at a confirm or revert before the cycle gives up on it.
DECISION_ATTEMPTS = 3
#: The statuses of a migration the benchmark fails back after an unexpected error.
ABANDONED = ("pre-migrating", "migrating", "finished")


def _count_refusals(client: PlacementClient, figures: Figures) -> None:
    """Count the allocation writes ``client`` gets refused, by exception class.

    Wraps this one client's write methods (an instance attribute shadows the
    method); the caller still sees every exception.
    """
    for name in ("put_allocations", "post_allocations"):
        method = getattr(client, name)

        def counted(*args: Any, _method: Callable[..., Any] = method, **kwargs: Any) -> Any:
            try:
                return _method(*args, **kwargs)
            except exception.PlacementError as exc:
                figures.refusal(exc)
                raise

        setattr(client, name, counted)


class Timed(NamedTuple):
    """One schedule+claim: its destination, ms, and where they went."""

    dest: Any
    ms: float
    #: ms with a Placement request in flight, and the requests
    placement_ms: float
    requests: int
    #: ms with a transaction of our database open and no Placement request
    #: in flight (of "ours"), and the transactions (None: not timed, other
    #: workers share the database)
    db_ms: float | None
    db_transactions: int | None
    #: of those, the ones that write (commits), and the SQL statements sent
    db_commits: int | None = None
    db_statements: int | None = None


class ResizeWorker:
    """Runs resize cycles over its own servers with its own client and tasks.

    :param deps: this worker's configuration, database, client and executor.
    :param servers: uuids of the servers only this worker resizes.
    :param flavors: name -> flavor (``small``, ``medium``, ``huge``).
    :param figures: where to count.
    :param db_timer: times ``deps.db`` (it counts every thread's
        transactions: give it only to a worker alone on the database).
    :param profiler: profiles each schedule+claim (this thread only).
    """

    def __init__(
        self,
        deps: TaskDeps,
        servers: list[str],
        flavors: dict[str, Any],
        figures: Figures,
        db_timer: DatabaseTimer | None = None,
        profiler: cProfile.Profile | None = None,
    ) -> None:
        self.db = deps.db
        self.profiler = profiler
        self.client = deps.client
        self.timer = PlacementTimer(self.client)
        self.db_timer = db_timer
        self.driver = MoveDriver(ResizeTask(deps), self.client, self.db)
        self.servers = servers
        self.flavors = flavors
        self.figures = figures
        _count_refusals(self.client, figures)

    def run(
        self,
        cycles: int,
        start: threading.Barrier | None = None,
        before_each: Callable[[], None] | None = None,
    ) -> None:
        """Run ``cycles`` cycles; a cycle that raises is counted, never fatal.

        :param before_each: called before every cycle, untimed (a floor sample).
        """
        if start is not None:
            start.wait()
        for n in range(cycles):
            if before_each is not None:
                before_each()
            self.figures.cycles += 1
            try:
                ok = self.cycle(n)
            except Exception as exc:  # counted and reported, never fatal
                self.figures.error(exc, "cycle")
                ok = False
            if not ok:
                self.figures.failed_cycles += 1

    def _timed_schedule(self, migration_uuid: str) -> Timed:
        """Schedule and claim, timed."""
        db_timer = self.db_timer
        self.timer.reset()
        if db_timer is not None:
            db_timer.reset()
        if self.profiler is not None:
            self.profiler.enable()
        started = time.perf_counter()
        try:
            dest = self.driver.schedule(migration_uuid)
        finally:
            if self.profiler is not None:
                self.profiler.disable()
        elapsed = (time.perf_counter() - started) * 1000
        return Timed(
            dest,
            elapsed,
            self.timer.ms,
            self.client.request_count,
            db_timer.ms_outside(self.timer) if db_timer else None,
            db_timer.count if db_timer else None,
            db_timer.commits if db_timer else None,
            db_timer.statements if db_timer else None,
        )

    def cycle(self, n: int, *, record: bool = True) -> bool:
        """Resize one server, finish, then confirm (even n) or revert (odd n).

        :param record: False for a warm-up: only the first-schedule figures
            and the outcome are kept.
        :returns: False when a step raised something (counted) other than
            NoValidHost; the resize was then failed back to its source.
        """
        figures = self.figures
        server = self.db.server_get(self.servers[n % len(self.servers)])
        target = self.flavors["medium" if server.flavor["name"] == "small" else "small"]
        migration = self._begin(server, target.flavorid)
        figures.touched.add(server.rp_uuid)
        try:
            timed = self._timed_schedule(migration.uuid)
        except exception.NoValidHost:
            figures.no_host += 1
            return True
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "schedule")
            self._abandon(migration.uuid, exc)
            return False
        dest, ms = timed.dest, timed.ms
        if record:
            own = ms - timed.placement_ms
            figures.latency_ms.append(ms)
            figures.placement_ms.append(timed.placement_ms)
            figures.own_ms.append(own)
            figures.schedule_rt.append(timed.requests)
            if timed.db_ms is not None and timed.db_transactions is not None:
                figures.db_ms.append(timed.db_ms)
                figures.own_outside_db_ms.append(max(0.0, own - timed.db_ms))
                figures.db_transactions.append(timed.db_transactions)
                figures.db_commits.append(timed.db_commits or 0)
                figures.db_statements.append(timed.db_statements or 0)
            figures.same_host += dest.same_host
            if dest.same_host:
                figures.in_place_ms.append(ms)
        else:
            figures.first_ms, figures.first_rt = ms, timed.requests
        figures.touched.add(dest.provider)
        try:
            self.driver.finish(migration.uuid)
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "finish")
            self._abandon(migration.uuid, exc)
            return False
        return self._decide(server.uuid, confirm=n % 2 == 0, record=record)

    def _begin(self, server: Any, flavorid: str) -> Any:
        """Record a resize of ``server`` to ``flavorid`` as the API does: with
        its instance action (os-instance-actions), so the schedule opens its
        event and closes it as in production."""
        return self.driver.begin(
            server.uuid,
            flavorid,
            context=RequestContext(user_id="bench", project_id=server.project_id),
        )

    def timed_failure(self, server_uuid: str) -> None:
        """Resize ``server_uuid`` to a flavor no host can take; count what it cost."""
        migration = self._begin(self.db.server_get(server_uuid), self.flavors["huge"].flavorid)
        figures = self.figures
        self.timer.reset()
        started = time.perf_counter()
        try:
            self.driver.schedule(migration.uuid)
        except exception.NoValidHost as exc:
            figures.failure_ms.append((time.perf_counter() - started) * 1000)
            figures.failure_placement_ms.append(self.timer.ms)
            figures.failure_rt.append(self.client.request_count)
            figures.failure_kinds[exc.kind] += 1
            return
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "failure")
            self._abandon(migration.uuid, exc)
            return
        figures.error(RuntimeError("a resize to 16 VCPU found a host"), "failure")

    def _decide(self, server_uuid: str, confirm: bool, record: bool = True) -> bool:
        """Confirm or revert, retrying; a revert refused for room becomes a confirm."""
        ok = True
        for _attempt in range(DECISION_ATTEMPTS):
            try:
                requests = self.driver.decide(server_uuid, confirm)
                if record:
                    (self.figures.confirm_rt if confirm else self.figures.revert_rt).append(
                        requests
                    )
            except Exception as exc:  # counted and reported, never fatal
                self.figures.error(exc, "confirm" if confirm else "revert")
                ok = False
                if isinstance(exc, exception.ClaimRefused):
                    # NOTE: the old flavor no longer fits on the source; what
                    # an operator would do is keep the new one.
                    confirm = True
                continue
            self.figures.completed += record
            return ok
        return False

    def _abandon(self, migration_uuid: str, cause: BaseException) -> None:
        """After an unexpected failure, fail the resize back to its source.

        As the conductor does when a resize cannot go on: the server gets its
        old allocation back and is ACTIVE on the source. Nothing is done when
        the resize already ended (``fail`` ran, e.g. RestoreFailed).
        """
        try:
            self.driver.abandon(
                migration_uuid, f"benchmark: {type(cause).__name__}", statuses=ABANDONED
            )
        except Exception as exc:  # counted and reported, never fatal
            self.figures.error(exc, "fail")
