"""Benchmark the claim strategies side by side against the real Placement.

For each strategy, in one run: a fresh embedded Placement (SQLite) and
database, ``--hosts`` compute hosts, a few servers per host, then
``--resizes`` resize cycles (resize, finish, then confirm or revert in turn),
driven through the real scheduler, executor and task flows with no RPC in
between, so the figures are Placement's and ours alone. Printed per strategy:

* Placement round trips from the start of scheduling to the claim (mean and
  max), and per confirm / revert;
* how many resizes stayed on their host, and how many found no host;
* latency of schedule+claim (p50, p95, p99) and resize throughput;
* the peak memory the run allocated (tracemalloc).

Run: ``python benchmarks/resize_bench.py --hosts 200 --resizes 60`` (or
``tox -e bench``). Nothing here is asserted; the tests assert behaviour.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.build import BuildTask
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementHTTP, PlacementInProcess

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")


@dataclass
class Figures:
    strategy: str
    schedule_rt: list[int] = field(default_factory=list)
    confirm_rt: list[int] = field(default_factory=list)
    revert_rt: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    same_host: int = 0
    no_host: int = 0
    elapsed_s: float = 0.0
    peak_mib: float = 0.0


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def run_strategy(strategy: str, args: argparse.Namespace) -> Figures:
    figures = Figures(strategy)
    with tempfile.TemporaryDirectory(prefix=f"bench-{strategy}-") as tmp:
        service_cls = PlacementHTTP if args.http else PlacementInProcess
        with service_cls(f"{tmp}/placement") as placement:
            conf = rs_conf.new_conf()
            rs_conf.parse_args(conf, [], default_config_files=[])
            placement.configure(conf)
            conf.set_override("claim_strategy", strategy, group="resize")
            conf.set_override("prefer_same_host", args.prefer_same_host, group="resize")
            db = Database(f"sqlite:///{tmp}/resize_sched.sqlite")
            db.sync()
            client = PlacementClient.from_conf(conf)
            deps = TaskDeps.build(conf, db, client)
            builds, resizes = BuildTask(deps), ResizeTask(deps)
            # Busy hosts hold `per_host` smalls (6 of 8 VCPU): a small->medium
            # resize needs 2 more VCPU there, which only a strategy that does
            # not count the server twice can find. A tenth of the hosts are
            # empty, so a resize that must move has somewhere to go.
            empty = max(1, args.hosts // 10)
            busy = args.hosts - empty
            for i in range(args.hosts):
                placement.add_host(f"host{i:05d}", vcpus=8, memory_mb=8192, disk_gb=400)
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
                servers.append(builds.spawned(server.uuid))

            tracemalloc.start()
            started = time.perf_counter()
            for n in range(args.resizes):
                server = db.server_get(servers[n % len(servers)].uuid)
                target = medium if server.flavor["name"] == "small" else small
                migration = resizes.begin(server.uuid, target.flavorid)
                client.reset_request_count()
                t0 = time.perf_counter()
                try:
                    dest = resizes.schedule(migration.uuid)
                except exception.NoValidHost:
                    figures.no_host += 1
                    continue
                finally:
                    figures.latency_ms.append((time.perf_counter() - t0) * 1000)
                figures.schedule_rt.append(client.request_count)
                figures.same_host += dest.same_host
                resizes.finish(migration.uuid)
                client.reset_request_count()
                if n % 2 == 0:
                    resizes.confirm(server.uuid)
                    figures.confirm_rt.append(client.request_count)
                else:
                    resizes.revert(server.uuid)
                    figures.revert_rt.append(client.request_count)
            figures.elapsed_s = time.perf_counter() - started
            figures.peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            db.dispose()
    return figures


def _mean(values: list[int]) -> str:
    return f"{statistics.mean(values):.2f}" if values else "-"


def report(all_figures: list[Figures], args: argparse.Namespace) -> None:
    print(
        f"\nresize_sched benchmark: {args.hosts} hosts (a tenth empty), "
        f"{args.per_host} small servers per busy host, "
        f"{args.resizes} resize cycles per strategy, Placement "
        f"{'over HTTP' if args.http else 'in-process'}, prefer_same_host={args.prefer_same_host}\n"
    )
    rows = [
        ("round trips, schedule->claim (mean)", lambda f: _mean(f.schedule_rt)),
        ("round trips, schedule->claim (max)", lambda f: str(max(f.schedule_rt, default=0))),
        ("round trips per confirm (mean)", lambda f: _mean(f.confirm_rt)),
        ("round trips per revert (mean)", lambda f: _mean(f.revert_rt)),
        ("resizes that stayed on their host", lambda f: f"{f.same_host}"),
        ("resizes with no valid host", lambda f: f"{f.no_host}"),
        ("schedule+claim p50 (ms)", lambda f: f"{_percentile(f.latency_ms, 50):.1f}"),
        ("schedule+claim p95 (ms)", lambda f: f"{_percentile(f.latency_ms, 95):.1f}"),
        ("schedule+claim p99 (ms)", lambda f: f"{_percentile(f.latency_ms, 99):.1f}"),
        ("resize cycles per second", lambda f: f"{args.resizes / f.elapsed_s:.1f}"),
        ("peak traced memory (MiB)", lambda f: f"{f.peak_mib:.1f}"),
    ]
    width = max(len(label) for label, _ in rows)
    header = " " * width + "".join(f"  {f.strategy:>16}" for f in all_figures)
    print(header)
    print("-" * len(header))
    for label, fn in rows:
        print(f"{label:<{width}}" + "".join(f"  {fn(f):>16}" for f in all_figures))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=100, help="compute hosts (default 100)")
    parser.add_argument("--per-host", type=int, default=3, help="servers per host (default 3)")
    parser.add_argument("--resizes", type=int, default=40, help="resize cycles (default 40)")
    parser.add_argument("--http", action="store_true", help="serve Placement over HTTP")
    parser.add_argument("--prefer-same-host", action="store_true")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args(argv)
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
