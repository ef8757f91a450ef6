"""Benchmark the claim strategies side by side against the real Placement.

For each strategy, in one run: a fresh Placement and database, ``--hosts``
compute hosts, a few servers per host, then ``--resizes`` resize cycles
(resize, finish, then confirm or revert in turn), driven through the real
scheduler, executor and task flows with no RPC in between, so the figures are
Placement's and ours alone. Printed per strategy:

* Placement round trips from the start of scheduling to the claim (mean and
  max), and per confirm / revert;
* how many resizes stayed on their host, and how many found no host;
* latency of schedule+claim (p50, p95, p99) and resize throughput;
* allocation writes Placement refused (capacity, generation conflicts),
  cycles that raised anything else (by exception class), and whether, at the
  end, every host's usage in Placement is what its servers' flavors add up to
  and within its inventory;
* the peak memory this process allocated (tracemalloc).

By default Placement is embedded in this process on SQLite (every request
serialised by one lock) and resize_sched's database is a SQLite file, and the
cycles run one after another. The production shape is available too:

* ``--placement-db URL``: Placement in its own process, served by waitress
  with ``--placement-threads`` threads, on a scratch database made on the
  MariaDB/MySQL or PostgreSQL server ``URL`` names (see
  ``external_placement.py``);
* ``--db URL``: resize_sched's database on a scratch database on that server;
* ``--workers N``: N threads run the cycles at once, each with its own
  Placement client and tasks and its own share of the servers; the hosts are
  shared, so their claims race;
* ``--placement-conflict-retries N``: Placement's server-side retries of an
  allocation write after a provider generation conflict (its
  ``allocation_conflict_retry_count``, 10 by default).

With an external Placement the table also shows what
Placement answered and logged while the cycles ran (from its log file).

Run: ``python benchmarks/resize_bench.py --hosts 200 --resizes 60`` (or
``tox -e bench``). Nothing here is asserted; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import logging
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from external_placement import ExternalPlacement, LogSummary, ScratchDatabase, backend_of

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementHTTP, PlacementInProcess

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")

#: Attempts at a confirm or revert before the cycle gives up on it.
DECISION_ATTEMPTS = 3


@dataclass
class Consistency:
    """Placement's usages against what the servers should hold, after a run."""

    hosts_checked: int = 0
    #: host name -> (expected usage, Placement's usage)
    differ: dict[str, tuple[rs.Resources, rs.Resources]] = field(default_factory=dict)
    #: per differing host: consumer -> what it holds there
    holders: dict[str, dict[str, rs.Resources]] = field(default_factory=dict)
    #: host name -> class -> (usage, capacity), where usage > capacity
    over_capacity: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    not_active: list[str] = field(default_factory=list)
    needs_heal: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.differ
            or self.over_capacity
            or self.not_active
            or self.needs_heal
            or self.in_flight
        )


@dataclass
class Figures:
    strategy: str
    schedule_rt: list[int] = field(default_factory=list)
    confirm_rt: list[int] = field(default_factory=list)
    revert_rt: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    same_host: int = 0
    no_host: int = 0
    cycles: int = 0
    completed: int = 0
    failed_cycles: int = 0
    #: exception class name -> how many times a cycle step raised it
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    #: exception class name -> one message, for the report
    error_examples: dict[str, str] = field(default_factory=dict)
    #: refused allocation writes (PUT/POST /allocations), by exception class
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    refused_examples: dict[str, str] = field(default_factory=dict)
    #: an external Placement's answers (``POST 409``...) and logged warnings
    #: while the cycles ran; None for an embedded one
    placement_log: LogSummary | None = None
    elapsed_s: float = 0.0
    peak_mib: float = 0.0
    consistency: Consistency | None = None

    def error(self, exc: BaseException, step: str) -> None:
        name = type(exc).__name__
        self.errors[name] += 1
        self.error_examples.setdefault(name, f"{step}: {_one_line(exc)}")

    def refusal(self, exc: BaseException) -> None:
        name = type(exc).__name__
        self.refused[name] += 1
        self.refused_examples.setdefault(name, _one_line(exc))

    def merge(self, other: Figures) -> None:
        """Add another worker's figures to these."""
        self.schedule_rt += other.schedule_rt
        self.confirm_rt += other.confirm_rt
        self.revert_rt += other.revert_rt
        self.latency_ms += other.latency_ms
        self.same_host += other.same_host
        self.no_host += other.no_host
        self.cycles += other.cycles
        self.completed += other.completed
        self.failed_cycles += other.failed_cycles
        self.errors.update(other.errors)
        for name, example in other.error_examples.items():
            self.error_examples.setdefault(name, example)
        self.refused.update(other.refused)
        for name, example in other.refused_examples.items():
            self.refused_examples.setdefault(name, example)


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


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


class ResizeWorker:
    """Runs resize cycles over its own servers with its own client and tasks.

    :param deps: this worker's configuration, database, client and executor.
    :param servers: uuids of the servers only this worker resizes.
    :param small: the small flavor; ``medium`` the medium one.
    :param figures: where to count.
    """

    def __init__(
        self, deps: TaskDeps, servers: list[str], small: Any, medium: Any, figures: Figures
    ) -> None:
        self.db = deps.db
        self.client = deps.client
        self.resizes = ResizeTask(deps)
        self.servers = servers
        self.small, self.medium = small, medium
        self.figures = figures
        _count_refusals(self.client, figures)

    def run(self, cycles: int, start: threading.Barrier | None = None) -> None:
        """Run ``cycles`` cycles; a cycle that raises is counted, never fatal."""
        if start is not None:
            start.wait()
        for n in range(cycles):
            self.figures.cycles += 1
            try:
                ok = self.cycle(n)
            except Exception as exc:  # counted and reported, never fatal
                self.figures.error(exc, "cycle")
                ok = False
            if not ok:
                self.figures.failed_cycles += 1

    def cycle(self, n: int) -> bool:
        """Resize one server, finish, then confirm (even n) or revert (odd n).

        :returns: False when a step raised something (counted) other than
            NoValidHost; the resize was then failed back to its source.
        """
        figures, client, resizes = self.figures, self.client, self.resizes
        server = self.db.server_get(self.servers[n % len(self.servers)])
        target = self.medium if server.flavor["name"] == "small" else self.small
        migration = resizes.begin(server.uuid, target.flavorid)
        client.reset_request_count()
        t0 = time.perf_counter()
        try:
            dest = resizes.schedule(migration.uuid)
        except exception.NoValidHost:
            figures.latency_ms.append((time.perf_counter() - t0) * 1000)
            figures.no_host += 1
            return True
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "schedule")
            self._abandon(migration.uuid, exc)
            return False
        figures.latency_ms.append((time.perf_counter() - t0) * 1000)
        figures.schedule_rt.append(client.request_count)
        figures.same_host += dest.same_host
        try:
            resizes.finish(migration.uuid)
        except Exception as exc:  # counted and reported, never fatal
            figures.error(exc, "finish")
            self._abandon(migration.uuid, exc)
            return False
        return self._decide(server.uuid, confirm=n % 2 == 0)

    def _decide(self, server_uuid: str, confirm: bool) -> bool:
        """Confirm or revert, retrying; a revert refused for room becomes a confirm."""
        ok = True
        for _attempt in range(DECISION_ATTEMPTS):
            self.client.reset_request_count()
            try:
                if confirm:
                    self.resizes.confirm(server_uuid)
                    self.figures.confirm_rt.append(self.client.request_count)
                else:
                    self.resizes.revert(server_uuid)
                    self.figures.revert_rt.append(self.client.request_count)
            except Exception as exc:  # counted and reported, never fatal
                self.figures.error(exc, "confirm" if confirm else "revert")
                ok = False
                if isinstance(exc, exception.ClaimRefused):
                    # NOTE: the old flavor no longer fits on the source; what
                    # an operator would do is keep the new one.
                    confirm = True
                continue
            self.figures.completed += 1
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


def check_consistency(db: Database, client: PlacementClient, hosts: dict[str, str]) -> Consistency:
    """Compare every host's usage in Placement with its servers' flavors and capacity.

    Meaningful when nothing is in flight: then each server holds exactly its
    flavor on its host and nothing else holds anything. Whatever the servers
    hold, no host may hold more than its inventory allows.

    :param hosts: host name -> provider uuid.
    """
    result = Consistency(hosts_checked=len(hosts))
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
    for name, rp in hosts.items():
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


def _placement_service(args: argparse.Namespace, tmp: str) -> Any:
    if args.placement_db:
        options = {}
        if args.placement_conflict_retries is not None:
            retries = {"allocation_conflict_retry_count": args.placement_conflict_retries}
            options["placement"] = retries
        return ExternalPlacement(
            args.placement_db, threads=args.placement_threads, options=options
        )
    service_cls = PlacementHTTP if args.http else PlacementInProcess
    return service_cls(f"{tmp}/placement")


def _split(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def run_strategy(strategy: str, args: argparse.Namespace) -> Figures:
    figures = Figures(strategy)
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"bench-{strategy}-"))
        placement = stack.enter_context(_placement_service(args, tmp))
        conf = rs_conf.new_conf()
        rs_conf.parse_args(conf, [], default_config_files=[])
        placement.configure(conf)
        conf.set_override("claim_strategy", strategy, group="resize")
        conf.set_override("prefer_same_host", args.prefer_same_host, group="resize")
        if args.db:
            db_url = stack.enter_context(ScratchDatabase(args.db, tmp)).url
        else:
            db_url = f"sqlite:///{tmp}/resize_sched.sqlite"
        db = Database(db_url)
        stack.callback(db.dispose)
        db.sync()
        client = PlacementClient.from_conf(conf)
        deps = TaskDeps.build(conf, db, client)
        builds = BuildTask(deps)
        # Busy hosts hold `per_host` smalls (6 of 8 VCPU): a small->medium
        # resize needs 2 more VCPU there, which only a strategy that does
        # not count the server twice can find. A tenth of the hosts are
        # empty, so a resize that must move has somewhere to go.
        empty = max(1, args.hosts // 10)
        busy = args.hosts - empty
        hosts = {}
        for i in range(args.hosts):
            name = f"host{i:05d}"
            hosts[name] = placement.add_host(name, vcpus=8, memory_mb=8192, disk_gb=400)
        small = db.flavor_create("small", 2, 2048, 20)
        medium = db.flavor_create("medium", 4, 4096, 40)
        servers = []
        for i in range(busy * args.per_host):
            server = builds.create(
                name=f"vm{i}",
                flavorid=small.flavorid,
                project_id="bench",
                user_id="bench",
                force_hosts=(f"host{i % busy:05d}",),
            )
            builds.schedule(server.uuid)
            servers.append(builds.spawned(server.uuid).uuid)

        if args.workers == 1:
            # The sequential loop: the conductor's own client and tasks.
            workers = [ResizeWorker(deps, servers, small, medium, Figures(strategy))]
        else:
            workers = []
            for w in range(args.workers):
                worker_client = PlacementClient.from_conf(conf)
                worker_deps = TaskDeps.build(conf, db, worker_client)
                # NOTE: warm up what every client does once (version
                # discovery, strategy loading), as the sequential loop's
                # client did during the builds, so round trips compare.
                _ = worker_client.max_version
                worker_deps.configured_strategy()
                workers.append(
                    ResizeWorker(
                        worker_deps, servers[w :: args.workers], small, medium, Figures(strategy)
                    )
                )
        shares = _split(args.resizes, args.workers)

        external = placement if isinstance(placement, ExternalPlacement) else None
        log_from = external.log_offset() if external else 0
        tracemalloc.start()
        started = time.perf_counter()
        if args.workers == 1:
            workers[0].run(shares[0])
        else:
            barrier = threading.Barrier(args.workers + 1)
            threads = [
                threading.Thread(
                    target=worker.run, args=(share, barrier), name=f"resize-worker-{i}"
                )
                for i, (worker, share) in enumerate(zip(workers, shares))
            ]
            for thread in threads:
                thread.start()
            barrier.wait()
            started = time.perf_counter()
            for thread in threads:
                thread.join()
        figures.elapsed_s = time.perf_counter() - started
        figures.peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        for worker in workers:
            figures.merge(worker.figures)
        if external is not None:
            figures.placement_log = external.log_summary(since=log_from)
        figures.consistency = check_consistency(db, PlacementClient.from_conf(conf), hosts)
    return figures


def _mean(values: list[int]) -> str:
    return f"{statistics.mean(values):.2f}" if values else "-"


def _over_capacity(f: Figures) -> str:
    return str(len(f.consistency.over_capacity)) if f.consistency else "-"


def _let_past(f: Figures) -> str:
    return str(f.placement_log.over_capacity_accepted) if f.placement_log else "-"


def _consistent(f: Figures) -> str:
    c = f.consistency
    if c is None:
        return "-"
    if not c.differ:
        return "yes"
    return f"no ({len(c.differ)} hosts differ)"


def _answers(f: Figures, status: str) -> str:
    if f.placement_log is None:
        return "-"
    return str(
        sum(n for key, n in f.placement_log.answers.items() if key.split()[1].startswith(status))
    )


def _describe_placement(args: argparse.Namespace) -> str:
    if args.placement_db:
        backend = backend_of(args.placement_db)
        return (
            f"external on {backend} with {args.placement_threads} threads "
            "(waitress, own process; its memory is not in the table)"
            + (
                f", allocation_conflict_retry_count={args.placement_conflict_retries}"
                if args.placement_conflict_retries is not None
                else ""
            )
        )
    if args.http:
        return "over HTTP (SQLite, one wsgiref thread)"
    return "in-process (SQLite, requests serialised)"


def _describe_db(args: argparse.Namespace) -> str:
    if args.db:
        return f"{backend_of(args.db)} (scratch database)"
    return "SQLite file"


def report(all_figures: list[Figures], args: argparse.Namespace) -> None:
    workers = f"{args.workers} worker{'s' if args.workers > 1 else ''}"
    print(
        f"\nresize_sched benchmark: {args.hosts} hosts (a tenth empty), "
        f"{args.per_host} small servers per busy host, "
        f"{args.resizes} resize cycles per strategy, prefer_same_host={args.prefer_same_host}\n"
        f"Placement: {_describe_placement(args)}; resize_sched database: "
        f"{_describe_db(args)}; {workers}"
        f"{' (concurrent, hosts shared)' if args.workers > 1 else ' (sequential)'}\n"
    )
    rows: list[tuple[str, Callable[[Figures], str]]] = [
        ("round trips, schedule->claim (mean)", lambda f: _mean(f.schedule_rt)),
        ("round trips, schedule->claim (max)", lambda f: str(max(f.schedule_rt, default=0))),
        ("round trips per confirm (mean)", lambda f: _mean(f.confirm_rt)),
        ("round trips per revert (mean)", lambda f: _mean(f.revert_rt)),
        ("resizes that stayed on their host", lambda f: f"{f.same_host}"),
        ("resizes with no valid host", lambda f: f"{f.no_host}"),
        ("schedule+claim p50 (ms)", lambda f: f"{_percentile(f.latency_ms, 50):.1f}"),
        ("schedule+claim p95 (ms)", lambda f: f"{_percentile(f.latency_ms, 95):.1f}"),
        ("schedule+claim p99 (ms)", lambda f: f"{_percentile(f.latency_ms, 99):.1f}"),
        ("resize cycles per second", lambda f: f"{f.cycles / f.elapsed_s:.1f}"),
        ("peak traced memory (MiB)", lambda f: f"{f.peak_mib:.1f}"),
        ("resize cycles run", lambda f: f"{f.cycles}"),
        ("  confirmed or reverted", lambda f: f"{f.completed}"),
        ("  with an error (below)", lambda f: f"{f.failed_cycles}"),
        ("wall time (s)", lambda f: f"{f.elapsed_s:.2f}"),
        ("claim writes refused: capacity", lambda f: f"{f.refused['ClaimRefused']}"),
        (
            "claim writes refused: generation",
            lambda f: f"{f.refused['ConsumerGenerationConflict']}",
        ),
        (
            "claim writes refused: other",
            lambda f: str(
                sum(f.refused.values())
                - f.refused["ClaimRefused"]
                - f.refused["ConsumerGenerationConflict"]
            ),
        ),
        ("Placement answers 409 (server log)", lambda f: _answers(f, "409")),
        ("Placement answers 5xx (server log)", lambda f: _answers(f, "5")),
        ("over-capacity writes logged (server log)", _let_past),
        (
            "servers not ACTIVE at the end",
            lambda f: str(len(f.consistency.not_active)) if f.consistency else "-",
        ),
        ("usages consistent", _consistent),
        ("hosts over capacity at the end", _over_capacity),
    ]
    width = max(len(label) for label, _ in rows)
    header = " " * width + "".join(f"  {f.strategy:>16}" for f in all_figures)
    print(header)
    print("-" * len(header))
    for label, fn in rows:
        print(f"{label:<{width}}" + "".join(f"  {fn(f):>16}" for f in all_figures))

    for f in all_figures:
        if f.errors:
            print(f"\n{f.strategy}: errors by class")
            for name, count in f.errors.most_common():
                print(f"  {name}: {count}  (first: {f.error_examples[name]})")
        others = {k: v for k, v in f.refused.items() if k != "ClaimRefused"}
        if others:
            print(f"\n{f.strategy}: claim writes refused other than for capacity")
            for name, count in sorted(others.items()):
                print(f"  {name}: {count}  (first: {f.refused_examples[name]})")
        if f.placement_log and f.placement_log.problems:
            # NOTE: a refused claim logs "Over capacity ... Needed: ..." once per
            # class; those are counted above, so only the rest is listed.
            refusals = {k: n for k, n in f.placement_log.problems.items() if " Needed: " in k}
            rest = collections.Counter(
                {k: n for k, n in f.placement_log.problems.items() if k not in refusals}
            )
            print(
                f"\n{f.strategy}: Placement logged {sum(refusals.values())} capacity refusal "
                f"lines and {sum(rest.values())} other warnings"
            )
            for line, count in rest.most_common(8):
                print(f"  {count} x {line}")
        c = f.consistency
        if c is None or c.ok:
            continue
        print(f"\n{f.strategy}: state after the run is not clean")
        for what, items in (
            ("servers not ACTIVE", c.not_active),
            ("servers flagged needs_heal", c.needs_heal),
            ("migrations in flight", c.in_flight),
        ):
            if items:
                print(f"  {what} ({len(items)}): {', '.join(items[:10])}")
        for host, classes in sorted(c.over_capacity.items()):
            over = ", ".join(f"{rc} {used} of {cap:g}" for rc, (used, cap) in classes.items())
            print(f"  {host} is over capacity: {over}")
        for host, (expected, usage) in sorted(c.differ.items()):
            print(f"  {host}: servers' flavors add up to {expected}, Placement has {usage}")
            for holder, held in sorted(c.holders[host].items()):
                print(f"    {holder} holds {held}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100, help="compute hosts (default 100)")
    parser.add_argument("--per-host", type=int, default=3, help="servers per host (default 3)")
    parser.add_argument("--resizes", type=int, default=40, help="resize cycles (default 40)")
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
        help="waitress threads serving Placement with --placement-db (default 8)",
    )
    parser.add_argument(
        "--placement-conflict-retries",
        type=int,
        metavar="N",
        help="with --placement-db: Placement's [placement] allocation_conflict_retry_count "
        "(its server-side retries of an allocation write after a provider generation "
        "conflict; Placement's default is 10, 1 means no retry)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="resize_sched's database: a scratch database on this server (default: SQLite)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="threads running resize cycles at once (default 1: sequential)",
    )
    parser.add_argument("--prefer-same-host", action="store_true")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args(argv)
    servers = (args.hosts - max(1, args.hosts // 10)) * args.per_host
    if not 1 <= args.workers <= servers:
        parser.error(f"--workers must be between 1 and the number of servers ({servers})")
    if args.placement_conflict_retries is not None and not args.placement_db:
        parser.error("--placement-conflict-retries needs --placement-db")
    # NOTE: resizes that find no host log a warning each; the table says it.
    logging.basicConfig(level=logging.ERROR)
    figures = []
    for strategy in args.strategies.split(","):
        print(f"running {strategy}...", file=sys.stderr, flush=True)
        figures.append(run_strategy(strategy, args))
    report(figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
