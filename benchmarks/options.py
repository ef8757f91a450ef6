"""The benchmark's command line: every option of ``resize_bench.py`` and its checks."""

from __future__ import annotations

import argparse
import os

#: What ``--help`` says the benchmark does.
DESCRIPTION = "Benchmark the claim strategies side by side against the real Placement."
#: The claim strategies compared, in the tables' order.
STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")


def _ints(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
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
