"""One cloud of the benchmark and the runs made on it: set up, resize, check, restore.

:class:`Bench` brings up Placement (embedded, over HTTP, or in processes of
its own on a database server), resize_sched's database and the cloud
(``cloud.py``), then runs one configuration at a time: the floor
(``floor.py``), the resize cycles of one or several racing workers
(``worker.py``), the resizes that fit nowhere, the moves (``moves.py``),
the consistency check (``consistency.py``) and the restore that leaves the
cloud as the next run expects it.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from cloud import Cloud, DatabaseTimer, build_cloud
from consistency import CHECK_ALL_HOSTS_UP_TO, CarriedOver, check_consistency
from external_placement import ExternalPlacement, ScratchDatabase
from figures import Figures, MoveFigures
from floor import measure_floor
from moves import MoveRunner
from worker import ResizeWorker

from resize_sched import conf as rs_conf
from resize_sched import resources as rs
from resize_sched.cmd import settle_heap
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementHTTP, PlacementInProcess


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
        #: what earlier runs on this cloud left wrong
        self._carried = CarriedOver()

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
                progress=progress,
            )
            self.cloud.setup_s["total"] = time.perf_counter() - started
            self.db_timer = DatabaseTimer(self.db)
            # NOTE: as each daemon does once started: what is alive now (the
            # cloud's set-up among it) is set apart from the collector.
            settle_heap()
            progress(
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
        figures.consistency = self._carried.fresh(
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
        figures.consistency = self._carried.fresh(
            check_consistency(
                self.db, PlacementClient.from_conf(self.conf), self.cloud.hosts, only
            )
        )
        return figures

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


def progress(message: str) -> None:
    """Tell the operator what runs now (on stderr, so that stdout is the report)."""
    print(message, file=sys.stderr, flush=True)
