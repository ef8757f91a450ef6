"""Benchmark the claim strategies side by side against the real Placement.

For each cloud size (``--hosts``, or every one of ``--sizes``), in one run:
one Placement and database, the hosts and servers set up fast (see
``cloud.py``: providers registered concurrently, a compute node report per
host, servers placed by direct allocation writes), then for each strategy,
with and without ``[resize] prefer_same_host``:

* the bare floor against the same Placement, just before (``floor.py``: one
  candidates query and one claim for the same request);
* ``--resizes`` resize cycles (resize, finish, then confirm or revert in
  turn) driven through the real scheduler, executor and task flows with no
  RPC in between, so the figures are Placement's and ours alone: Placement
  requests per resize / confirm / revert (counted by the client), latency of
  schedule+claim and its ratio to the floor, the time of it spent inside
  Placement requests and the rest ("ours"), of ours the time with one of
  our database transactions open and its count, the in-place resizes'
  latency;
* ``--failures`` resizes to a flavor no host can take, even empty: their
  requests and time, next to a bare candidates query;
* at the end, every host's usage in Placement checked against its servers'
  flavors and its inventory (every host up to 200 hosts, else the hosts the
  resizes and the floor touched).

On the smallest cloud, each strategy also runs with 1, 2 and 4 workers
(``--concurrency``), each worker with its own client and servers, racing for
the same hosts: throughput, p50, capacity refusals and generation conflicts
per resize. Then the API, conductor and compute daemons over RabbitMQ are
driven through the HTTP API (``fullstack.py``; skipped, saying why, when the
broker cannot be reached; ``--no-full-stack`` to leave it out). ``--json
PATH`` writes every figure.

By default Placement is embedded in this process on SQLite (every request
serialised by one lock) and resize_sched's database is a SQLite file. The
production shape: ``--placement-db URL`` (Placement in its own process under
waitress, on a scratch database on that MariaDB/MySQL or PostgreSQL server,
see ``external_placement.py``) and ``--db URL``.

Run: ``python benchmarks/resize_bench.py --sizes 100,1000`` (or ``tox -e
bench``). Nothing here is asserted; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import logging
import os
import platform
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from cloud import Cloud, DatabaseTimer, PlacementTimer, build_cloud
from external_placement import ExternalPlacement, ScratchDatabase
from figures import Consistency, Figures, MoveFigures
from floor import measure_floor
from moves import MoveRunner
from report import (
    LEGEND,
    ROWS,
    describe_db,
    describe_placement,
    print_concurrency,
    print_details,
    print_moves,
    print_scaling,
    print_table,
)

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.cmd import settle_heap
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.context import RequestContext
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementHTTP, PlacementInProcess

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")

#: Attempts at a confirm or revert before the cycle gives up on it.
DECISION_ATTEMPTS = 3
#: Up to this many hosts the consistency check reads every host.
CHECK_ALL_HOSTS_UP_TO = 200


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
        self.resizes = ResizeTask(deps)
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
        self.client.reset_request_count()
        self.timer.reset()
        if db_timer is not None:
            db_timer.reset()
        if self.profiler is not None:
            self.profiler.enable()
        started = time.perf_counter()
        try:
            dest = self.resizes.schedule(migration_uuid)
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
            self.resizes.finish(migration.uuid)
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "finish")
            self._abandon(migration.uuid, exc)
            return False
        return self._decide(server.uuid, confirm=n % 2 == 0, record=record)

    def _begin(self, server: Any, flavorid: str) -> Any:
        """Record a resize of ``server`` to ``flavorid`` as the API does: with
        its instance action (os-instance-actions), so the schedule opens its
        event and closes it as in production."""
        return self.resizes.begin(
            server.uuid,
            flavorid,
            context=RequestContext(user_id="bench", project_id=server.project_id),
        )

    def timed_failure(self, server_uuid: str) -> None:
        """Resize ``server_uuid`` to a flavor no host can take; count what it cost."""
        migration = self._begin(self.db.server_get(server_uuid), self.flavors["huge"].flavorid)
        figures = self.figures
        self.client.reset_request_count()
        self.timer.reset()
        started = time.perf_counter()
        try:
            self.resizes.schedule(migration.uuid)
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
            self.client.reset_request_count()
            try:
                if confirm:
                    self.resizes.confirm(server_uuid)
                    if record:
                        self.figures.confirm_rt.append(self.client.request_count)
                else:
                    self.resizes.revert(server_uuid)
                    if record:
                        self.figures.revert_rt.append(self.client.request_count)
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
            migration = self.db.migration_get(migration_uuid)
            if migration.status in ("pre-migrating", "migrating", "finished"):
                self.resizes.fail(
                    migration_uuid, kind="failed", reason=f"benchmark: {type(cause).__name__}"
                )
        except Exception as exc:  # counted and reported, never fatal
            self.figures.error(exc, "fail")


def check_consistency(
    db: Database, client: PlacementClient, hosts: dict[str, str], only: set[str] | None = None
) -> Consistency:
    """Compare hosts' usage in Placement with their servers' flavors and capacity.

    Meaningful when nothing is in flight: then each server holds exactly its
    flavor on its host and nothing else holds anything. Whatever the servers
    hold, no host may hold more than its inventory allows.

    :param hosts: host name -> provider uuid.
    :param only: provider uuids to read (None: every host).
    """
    checked = {n: rp for n, rp in hosts.items() if only is None or rp in only}
    result = Consistency(hosts_checked=len(checked))
    servers = db.server_list()
    expected: dict[str, rs.Resources] = {}
    for server in servers:
        if server.status != "ACTIVE" or server.task_state is not None:
            result.not_active.append(f"{server.name} {server.status}/{server.task_state}")
        if server.needs_heal:
            result.needs_heal.append(server.name)
        if server.rp_uuid:
            wanted = rs.flavor_request(server.flavor).resources
            expected[server.rp_uuid] = rs.add(expected.get(server.rp_uuid, {}), wanted)
    result.in_flight = [f"{m.uuid} {m.status}" for m in db.migration_list_in_flight()]
    names = {server.uuid: server.name for server in servers}
    for name, rp in checked.items():
        usage = client.get_usages(rp)
        inventories, _generation = client.get_inventories(rp)
        for rc, used in usage.items():
            capacity = rs.capacity(inventories.get(rc, {}))
            if used > capacity:
                result.over_capacity.setdefault(name, {})[rc] = (used, capacity)
        if usage != expected.get(rp, {}):
            result.differ[name] = (expected.get(rp, {}), usage)
            result.holders[name] = {
                names.get(consumer, f"consumer {consumer}"): held
                for consumer, held in client.get_provider_allocations(rp).items()
            }
    return result


# -- one cloud ---------------------------------------------------------------------------


def _placement_service(args: argparse.Namespace, tmp: str) -> Any:
    if args.placement_db:
        options = {}
        if args.placement_conflict_retries is not None:
            retries = {"allocation_conflict_retry_count": args.placement_conflict_retries}
            options["placement"] = retries
        return ExternalPlacement(
            args.placement_db,
            threads=args.placement_threads,
            processes=args.placement_processes,
            options=options,
        )
    service_cls = PlacementHTTP if args.http else PlacementInProcess
    return service_cls(f"{tmp}/placement")


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


class Bench:
    """One cloud of ``hosts`` hosts and the runs made on it.

    :param args: the command line.
    :param hosts: the cloud's size.
    """

    def __init__(self, args: argparse.Namespace, hosts: int) -> None:
        self.args = args
        self.hosts = hosts
        self.conf: Any = None
        self.db: Database | None = None
        self.cloud: Cloud | None = None
        self.placement: Any = None
        self.db_timer: DatabaseTimer | None = None
        self._next_server = 0
        #: what earlier runs on this cloud left wrong (see _carried_over)
        self._known: set[tuple[str, str]] = set()

    @contextlib.contextmanager
    def up(self) -> Iterator[Bench]:
        """Placement, database and cloud for the duration of the block."""
        args = self.args
        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-"))
            self.placement = stack.enter_context(_placement_service(args, tmp))
            conf = rs_conf.new_conf()
            rs_conf.parse_args(conf, [], default_config_files=[])
            # NOTE: the hosts report once, at setup; in a deployment each
            # reports every report_interval. So that the ComputeFilter finds
            # them up however long the runs take (a loaded machine, 10,000
            # hosts), their last report counts as recent for the whole run.
            conf.set_override("service_down_time", 7 * 86400)
            self.placement.configure(conf)
            self.conf = conf
            if args.db:
                db_url = stack.enter_context(ScratchDatabase(args.db, tmp)).url
            else:
                db_url = f"sqlite:///{tmp}/resize_sched.sqlite"
            self.db = Database(db_url)
            stack.callback(self.db.dispose)
            self.db.sync()
            started = time.perf_counter()
            self.cloud = build_cloud(
                make_client=lambda: PlacementClient.from_conf(conf),
                db=self.db,
                deployment_name=conf.placement.deployment_name,
                hosts=self.hosts,
                per_host=args.per_host,
                threads=args.setup_threads,
                progress=_progress,
            )
            self.cloud.setup_s["total"] = time.perf_counter() - started
            self.db_timer = DatabaseTimer(self.db)
            # NOTE: as each daemon does once started: what is alive now (the
            # cloud's set-up among it) is set apart from the collector.
            settle_heap()
            _progress(
                f"  {self.hosts} hosts, {len(self.cloud.servers)} servers set up in "
                f"{self.cloud.setup_s['total']:.1f} s"
            )
            yield self

    def _take_servers(self, count: int) -> list[str]:
        """The next ``count`` servers, round the list, so each run resizes fresh ones.

        A server an earlier run left flagged ``needs_heal`` (a refused
        restore, counted there) is passed over: its resize would be refused.
        """
        assert self.cloud is not None and self.db is not None
        flagged = {s.uuid for s in self.db.server_list(needs_heal=True)}
        servers = [s for s in self.cloud.servers if s not in flagged]
        count = min(count, len(servers))
        start = self._next_server % len(servers)
        taken = [servers[(start + i) % len(servers)] for i in range(count)]
        self._next_server = (start + count) % len(servers)
        return taken

    def _deps(self, strategy: str, prefer_same_host: bool, subset: int | None) -> TaskDeps:
        conf = self.conf
        conf.set_override("claim_strategy", strategy, group="resize")
        conf.set_override("prefer_same_host", prefer_same_host, group="resize")
        if subset is not None:
            conf.set_override("host_subset_size", subset, group="filter_scheduler")
        else:
            conf.clear_override("host_subset_size", group="filter_scheduler")
        deps = TaskDeps.build(conf, self.db, PlacementClient.from_conf(conf))
        # NOTE: what a conductor does once at start (version discovery,
        # strategy loading) is not a resize's cost.
        _ = deps.client.max_version
        deps.configured_strategy()
        return deps

    def run(
        self, strategy: str, prefer_same_host: bool, workers: int = 1, subset: int | None = None
    ) -> Figures:
        """Floor, cycles (and, with one worker, failures) of one configuration.

        :param subset: ``[filter_scheduler] host_subset_size`` (None: ``--host-subset-size``,
            else the option's default).
        """
        args, cloud = self.args, self.cloud
        assert cloud is not None
        subset = subset if subset is not None else args.host_subset_size
        figures = Figures(strategy, prefer_same_host, workers, self.hosts, subset)
        conf = self.conf
        flavors = cloud.flavors
        floor_client = PlacementClient.from_conf(conf)
        _ = floor_client.max_version
        medium = rs.flavor_request(flavors["medium"].to_snapshot()).resources
        huge = rs.flavor_request(flavors["huge"].to_snapshot()).resources

        floor_s = [0.0]

        def floor_sample(samples: int = 1) -> None:
            started = time.perf_counter()
            figures.floor.merge(measure_floor(floor_client, conf, medium, huge, samples))
            floor_s[0] += time.perf_counter() - started

        if workers > 1:
            floor_sample(args.floor_samples)
        servers = self._take_servers(args.resizes + 1 + (args.failures if workers == 1 else 0))
        runners = []
        for w in range(workers):
            mine = servers[1:][w::workers] if workers > 1 else servers[1:]
            runners.append(
                ResizeWorker(
                    self._deps(strategy, prefer_same_host, subset),
                    mine,
                    flavors,
                    Figures(strategy, prefer_same_host, workers, self.hosts, subset),
                    # NOTE: the timer counts every thread's transactions.
                    self.db_timer if workers == 1 else None,
                    cProfile.Profile() if workers == 1 and args.profile else None,
                )
            )
        # The first schedule of a fresh scheduler, apart from the rest.
        first = runners[0]
        first.servers = [servers[0], *first.servers]
        first.cycle(0, record=False)
        figures.first_ms, figures.first_rt = first.figures.first_ms, first.figures.first_rt
        first.servers = first.servers[1:]
        first.figures.cycles = 0

        external = self.placement if isinstance(self.placement, ExternalPlacement) else None
        log_from = external.log_offset() if external else 0
        if args.trace_memory:
            tracemalloc.start()
        shares = _split(args.resizes, workers)
        if workers == 1:
            started = time.perf_counter()
            # NOTE: one floor sample before every cycle, so that both see the
            # same moment of a machine whose load changes.
            first.run(shares[0], before_each=floor_sample)
            started += floor_s[0]  # the floor's samples are not the cycles' time
        else:
            barrier = threading.Barrier(workers + 1)
            threads = [
                threading.Thread(
                    target=worker.run, args=(share, barrier), name=f"resize-worker-{i}"
                )
                for i, (worker, share) in enumerate(zip(runners, shares))
            ]
            for thread in threads:
                thread.start()
            barrier.wait()
            started = time.perf_counter()
            for thread in threads:
                thread.join()
        figures.elapsed_s = time.perf_counter() - started
        if first.profiler is not None:
            os.makedirs(args.profile, exist_ok=True)
            name = f"{self.hosts}-{figures.label.replace(' ', '')}.prof"
            first.profiler.dump_stats(os.path.join(args.profile, name))
        if args.trace_memory:
            figures.peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        for worker in runners:
            figures.merge(worker.figures)
        if external is not None:
            figures.placement_log = external.log_summary(since=log_from)

        if workers == 1:
            failing = ResizeWorker(
                self._deps(strategy, prefer_same_host, subset),
                [],
                flavors,
                Figures(strategy, prefer_same_host),
            )
            for server in servers[len(servers) - args.failures :]:
                failing.timed_failure(server)
            f = failing.figures
            figures.failure_rt, figures.failure_ms = f.failure_rt, f.failure_ms
            figures.failure_placement_ms, figures.failure_kinds = (
                f.failure_placement_ms,
                f.failure_kinds,
            )
            for name, count in f.errors.items():
                figures.errors[name] += count
                figures.error_examples.setdefault(name, f.error_examples[name])

        self._restore(servers, strategy, figures)
        figures.touched |= figures.floor.providers
        only = None if self.hosts <= CHECK_ALL_HOSTS_UP_TO else figures.touched
        figures.consistency = self._carried_over(
            check_consistency(self.db, PlacementClient.from_conf(conf), cloud.hosts, only)
        )
        return figures

    def run_moves(self, strategy: str) -> MoveFigures:
        """``--moves`` cold migrations (confirmed and reverted in turn), live
        migrations completed, live migrations rolled back and evacuations of
        fresh servers under ``strategy``, each counted phase by phase
        (``moves.py``), then the hosts they touched checked."""
        assert self.cloud is not None and self.db is not None
        count = self.args.moves
        figures = MoveFigures(strategy)
        deps = self._deps(strategy, False, None)
        touched: set[str] = set()

        def after(step: str, migration_uuid: str) -> None:
            migration = self.db.migration_get(migration_uuid)
            touched.update(p for p in (migration.source_rp_uuid, migration.dest_rp_uuid) if p)

        runner = MoveRunner(deps, after)
        servers = iter(self._take_servers(4 * count))
        moves: list[tuple[str, Callable[[str], None]]] = []
        for n in range(count):
            moves.append(("cold migration", lambda s, n=n: runner.cold_migration(s, n % 2 == 0)))
            moves.append(("live migration", lambda s: runner.live_migration(s, True)))
            moves.append(("live rollback", lambda s: runner.live_migration(s, False)))
            moves.append(("evacuation", runner.evacuation))
        started = time.perf_counter()
        for (name, move), server in zip(moves, servers):
            figures.moves += 1
            try:
                move(server)
            except Exception as exc:  # counted and reported, never fatal
                figures.error(exc, name)
        figures.elapsed_s = time.perf_counter() - started
        figures.requests = dict(runner.counts)
        only = None if self.hosts <= CHECK_ALL_HOSTS_UP_TO else touched
        figures.consistency = self._carried_over(
            check_consistency(
                self.db, PlacementClient.from_conf(self.conf), self.cloud.hosts, only
            )
        )
        return figures

    def _carried_over(self, found: Consistency) -> Consistency:
        """Leave out what an earlier run on this cloud already left wrong (counted apart).

        A run that leaves a server flagged for healing (drop_and_reclaim's
        restore refused under concurrency) would otherwise be blamed on
        every later run.
        """
        known = self._known
        fresh = Consistency(hosts_checked=found.hosts_checked)
        for host, pair in found.differ.items():
            if ("differ", host) in known:
                fresh.carried_over += 1
            else:
                fresh.differ[host] = pair
                fresh.holders[host] = found.holders.get(host, {})
        for host, classes in found.over_capacity.items():
            if ("over", host) in known:
                fresh.carried_over += 1
            else:
                fresh.over_capacity[host] = classes
        for kind, items, target in (
            ("not_active", found.not_active, fresh.not_active),
            ("needs_heal", found.needs_heal, fresh.needs_heal),
            ("in_flight", found.in_flight, fresh.in_flight),
        ):
            for item in items:
                if (kind, item) in known:
                    fresh.carried_over += 1
                else:
                    target.append(item)
        known.update(("differ", host) for host in found.differ)
        known.update(("over", host) for host in found.over_capacity)
        known.update(("not_active", item) for item in found.not_active)
        known.update(("needs_heal", item) for item in found.needs_heal)
        known.update(("in_flight", item) for item in found.in_flight)
        return fresh

    def _restore(self, servers: list[str], strategy: str, figures: Figures) -> None:
        """Resize the servers a run left medium back to small (untimed, confirmed).

        Without it every run would leave the cloud fuller for the next one.
        """
        assert self.cloud is not None and self.db is not None
        grown = [s for s in servers if self.db.server_get(s).flavor["name"] != "small"]
        if not grown:
            return
        restorer = ResizeWorker(
            self._deps(strategy, True, None), grown, self.cloud.flavors, Figures(strategy)
        )
        for server in grown:
            restorer.servers = [server]
            try:
                restorer.cycle(0, record=False)
            except Exception as exc:  # counted and reported, never fatal
                restorer.figures.error(exc, "restore")
        for name, count in restorer.figures.errors.items():
            figures.errors[f"{name} (restoring)"] += count
            figures.error_examples.setdefault(
                f"{name} (restoring)", restorer.figures.error_examples[name]
            )
        figures.touched |= restorer.figures.touched


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the report --------------------------------------------------------------------------


# -- main --------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--hosts", type=int, default=100, help="compute hosts (default 100)")
    size.add_argument(
        "--sizes",
        type=_ints,
        metavar="N,N,...",
        help="run the whole benchmark on a cloud of each size, e.g. 100,1000,10000",
    )
    parser.add_argument("--per-host", type=int, default=3, help="servers per busy host (3)")
    parser.add_argument("--resizes", type=int, default=40, help="resize cycles per run (40)")
    parser.add_argument(
        "--failures",
        type=int,
        default=3,
        help="resizes that fit nowhere, per strategy and size (3)",
    )
    parser.add_argument(
        "--moves",
        type=int,
        default=2,
        help="on the first cloud, per strategy: cold migrations (confirmed and "
        "reverted in turn), live migrations completed, live migrations rolled back "
        "and evacuations, each this many times, their Placement requests per phase "
        "beside Nova's (2; 0 to skip)",
    )
    parser.add_argument(
        "--floor-samples",
        type=int,
        default=10,
        help="floor samples before a run with several workers (10); with one worker, "
        "one sample is taken before every cycle instead",
    )
    parser.add_argument(
        "--same-host",
        choices=("off", "on", "both"),
        default="both",
        help="[resize] prefer_same_host for each strategy (default both)",
    )
    parser.add_argument(
        "--prefer-same-host",
        action="store_const",
        dest="same_host",
        const="on",
        help="same as --same-host on",
    )
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument(
        "--concurrency",
        type=_ints,
        default=[1, 2, 4],
        metavar="N,N,...",
        help="worker counts run on the smallest cloud, without prefer_same_host "
        "(default 1,2,4; empty to skip)",
    )
    parser.add_argument(
        "--host-subset-size",
        type=int,
        metavar="N",
        help="[filter_scheduler] host_subset_size for every run (default: the option's default)",
    )
    parser.add_argument(
        "--concurrency-subsets",
        type=_ints,
        default=[1, 4, 8],
        metavar="N,N,...",
        help="[filter_scheduler] host_subset_size values the concurrency runs compare "
        "(default 1,4,8: always the best host, or one of the best four or eight "
        "at random)",
    )
    parser.add_argument(
        "--concurrency-resizes",
        type=int,
        help="resize cycles per concurrency run (default: 2 x --resizes)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--http", action="store_true", help="serve Placement over HTTP")
    where.add_argument(
        "--placement-db",
        metavar="URL",
        help="run Placement in its own process on a scratch database on this "
        "server (mysql+pymysql://..., postgresql+psycopg://...)",
    )
    parser.add_argument(
        "--placement-threads",
        type=int,
        default=8,
        help="waitress threads per Placement process with --placement-db (default 8)",
    )
    parser.add_argument(
        "--placement-processes",
        type=int,
        default=os.cpu_count() or 1,
        help="Placement worker processes with --placement-db (default: one per core, "
        "as a deployment runs it under uWSGI or mod_wsgi)",
    )
    parser.add_argument(
        "--placement-conflict-retries",
        type=int,
        metavar="N",
        help="with --placement-db: Placement's [placement] allocation_conflict_retry_count",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="resize_sched's database: a scratch database on this server (default: SQLite)",
    )
    parser.add_argument(
        "--setup-threads",
        type=int,
        default=8,
        help="threads registering providers and placing servers (default 8)",
    )
    parser.add_argument(
        "--trace-memory",
        action="store_true",
        help="report peak traced memory (tracemalloc slows everything down)",
    )
    stack = parser.add_mutually_exclusive_group()
    stack.add_argument(
        "--full-stack",
        action="store_true",
        default=True,
        help="also drive API -> conductor -> compute daemons over RabbitMQ (the "
        "default; skipped, saying why, when the broker cannot be reached)",
    )
    stack.add_argument(
        "--no-full-stack", action="store_false", dest="full_stack", help="skip the full stack"
    )
    parser.add_argument(
        "--transport-url",
        default=os.environ.get("RESIZE_SCHED_TEST_RABBIT_URL", ""),
        help="RabbitMQ for --full-stack (default: $RESIZE_SCHED_TEST_RABBIT_URL)",
    )
    parser.add_argument(
        "--full-stack-hosts", type=int, default=10, help="compute daemons (default 10)"
    )
    parser.add_argument(
        "--full-stack-clients",
        type=_ints,
        default=[1, 4],
        metavar="N,N,...",
        help="concurrent API clients (default 1,4)",
    )
    parser.add_argument(
        "--full-stack-resizes",
        type=int,
        default=20,
        help="resizes per client count (default 20)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="profile every schedule+claim of the 1-worker runs (cProfile, the "
        "calling thread) and write DIR/<hosts>-<configuration>.prof",
    )
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or [args.hosts]
    if min(args.sizes) < 2:
        parser.error("a cloud needs at least 2 hosts")
    if args.placement_conflict_retries is not None and not args.placement_db:
        parser.error("--placement-conflict-retries needs --placement-db")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # NOTE: resizes that find no host log a warning each; the table says it.
    logging.basicConfig(level=logging.ERROR)
    strategies = [s for s in args.strategies.split(",") if s]
    same_host = {"off": [False], "on": [True], "both": [False, True]}[args.same_host]
    started = time.perf_counter()
    by_size: dict[int, list[Figures]] = {}
    setups: dict[int, dict[str, Any]] = {}
    concurrency: list[Figures] = []
    moves: list[MoveFigures] = []
    for n, hosts in enumerate(args.sizes):
        _progress(f"{hosts} hosts: setting up...")
        with Bench(args, hosts).up() as bench:
            assert bench.cloud is not None
            setups[hosts] = {
                "seconds": {k: round(v, 2) for k, v in bench.cloud.setup_s.items()},
                "servers": len(bench.cloud.servers),
                "compute_nodes": len(bench.db.compute_node_list()),
                "how": bench.cloud.how,
            }
            by_size[hosts] = []
            for strategy in strategies:
                for psh in same_host:
                    _progress(f"{hosts} hosts: {strategy}, prefer_same_host={psh}...")
                    by_size[hosts].append(bench.run(strategy, psh))
            if n == 0 and args.moves > 0:
                for strategy in strategies:
                    _progress(f"{hosts} hosts: {strategy}, moves...")
                    moves.append(bench.run_moves(strategy))
            if n == 0 and args.concurrency:
                saved = args.resizes
                args.resizes = args.concurrency_resizes or 2 * saved
                for strategy in strategies:
                    for subset in args.concurrency_subsets or [None]:
                        for workers in args.concurrency:
                            _progress(
                                f"{hosts} hosts: {strategy}, {workers} worker(s)"
                                + (f", host_subset_size {subset}" if subset else "")
                                + "..."
                            )
                            concurrency.append(bench.run(strategy, False, workers, subset))
                args.resizes = saved
    full_stack: dict[str, Any] | None = None
    if args.full_stack:
        import fullstack

        full_stack = fullstack.run(args, _progress)

    elapsed = time.perf_counter() - started
    print(
        f"\nresize_sched benchmark: {args.per_host} small servers per busy host (a tenth of "
        f"the hosts empty), {args.resizes} resize cycles per run, a floor sample before each "
        f"(concurrency: {args.floor_samples} before the run), {args.failures} resizes that "
        f"fit nowhere per strategy\n"
        f"Placement: {describe_placement(args)}; resize_sched database: {describe_db(args)}; "
        f"+psh = [resize] prefer_same_host; requests counted by the client; {elapsed:.0f} s"
        + (
            f"; [filter_scheduler] host_subset_size={args.host_subset_size}"
            if args.host_subset_size is not None
            else ""
        )
    )
    print(LEGEND)
    for hosts, setup in setups.items():
        seconds = ", ".join(f"{k} {v:.1f}" for k, v in setup["seconds"].items())
        print(f"setup of {hosts} hosts, {setup['servers']} servers (s): {seconds}")
    print(f"setup: {next(iter(setups.values()))['how']}")
    for hosts, figures in by_size.items():
        print_table(f"{hosts} hosts, 1 worker", figures, ROWS)
    print_moves(moves)
    if len(by_size) > 1:
        print_scaling(by_size)
    print_concurrency(concurrency)
    if full_stack is not None:
        fullstack.print_report(full_stack)
    print_details([f for figures in by_size.values() for f in figures] + concurrency)

    if args.json:
        document = {
            "command": sys.argv if argv is None else ["resize_bench.py", *argv],
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "placement": describe_placement(args),
            "database": describe_db(args),
            "host_subset_size": args.host_subset_size,
            "elapsed_s": round(elapsed, 1),
            "setup": setups,
            "sizes": {
                str(hosts): [f.to_json() for f in figures] for hosts, figures in by_size.items()
            },
            "concurrency": [f.to_json() for f in concurrency],
            "moves": [f.to_json() for f in moves],
            "full_stack": full_stack,
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, sort_keys=True)
        _progress(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
