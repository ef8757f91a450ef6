"""The HA run's command line, and the daemons' messaging, Galera and logging options."""

from __future__ import annotations

import argparse
import os
import random

from oslo_log import _options as log_options

from tests.chaos import soak as chaos_soak


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.ha.run",
        description="Run resize_sched (API, two conductors, two computes) over a "
        "three-node RabbitMQ cluster with quorum queues and a three-node Galera "
        "cluster on loopback, inject broker and database node faults one after "
        "the other under the chaos soak's clients, then check the invariants and "
        "print each fault's window: operations, casts lost and doubled, the time to "
        "the first successful resize, database retries, errors. See doc/ha.rst.",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seeds the clients (default: random, printed)"
    )
    parser.add_argument(
        "--strategy",
        choices=(*chaos_soak.STRATEGIES, "seed"),
        default="seed",
        help="the claim strategy; 'seed' (default) picks it from the seed",
    )
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients (4)")
    parser.add_argument("--computes", type=int, default=2, help="compute daemons (2)")
    parser.add_argument(
        "--warmup", type=float, default=15.0, help="seconds of clients before the first fault (15)"
    )
    parser.add_argument(
        "--down",
        type=float,
        default=15.0,
        help="seconds a SIGKILLed node (broker or Galera) stays down before it is restarted (15)",
    )
    parser.add_argument(
        "--outage",
        type=float,
        default=5.0,
        help="seconds the whole broker cluster stays stopped (5)",
    )
    parser.add_argument(
        "--stop-app",
        type=float,
        default=60.0,
        help="seconds one broker node stays stop_app'ed (60)",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=35.0,
        help="each fault's window lasts at least this long from its recovery clock, "
        "and at least --settle seconds after the fault is undone (35)",
    )
    parser.add_argument(
        "--settle", type=float, default=8.0, help="seconds after a fault is undone (8)"
    )
    parser.add_argument(
        "--recover-within",
        type=float,
        default=30.0,
        help="the criterion: seconds from a fault's recovery clock to the first "
        "successful resize (30)",
    )
    parser.add_argument(
        "--quiesce-timeout",
        type=float,
        default=150.0,
        help="seconds to wait for everything to settle after the faults (150)",
    )
    parser.add_argument(
        "--placement-db-url",
        default=os.environ.get("RESIZE_SCHED_TEST_MYSQL_URL", ""),
        help="a MariaDB/MySQL server for Placement's scratch database (another "
        "service's database, not on the Galera cluster; default "
        "$RESIZE_SCHED_TEST_MYSQL_URL)",
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="configs, logs and the clusters' data (default: a temporary directory, "
        "removed after a clean run, kept and printed otherwise)",
    )
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    if args.strategy == "seed":
        args.strategy = chaos_soak.STRATEGIES[args.seed % 3]
    # NOTE: what the chaos soak's Soak methods read.
    base = chaos_soak.parse_args(
        ["--seed", str(args.seed), "--strategy", args.strategy, "--clients", str(args.clients)]
        + ["--computes", str(args.computes), "--fault-rate", "0"]
    )
    for name, value in vars(base).items():
        setattr(args, name, getattr(args, name, value))
    return args


def rabbit_options() -> str:
    """The daemons' messaging, Galera and logging options for the HA run."""
    levels = ",".join([*log_options.DEFAULT_LOG_LEVELS, "resize_sched.rpc.trace=DEBUG"])
    return (
        "[oslo_messaging_rabbit]\n"
        "rabbit_quorum_queue = true\n"
        "heartbeat_timeout_threshold = 10\n"
        "heartbeat_rate = 2\n"
        "kombu_reconnect_delay = 0.5\n"
        "rabbit_retry_interval = 1\n"
        "rabbit_retry_backoff = 1\n"
        "rabbit_interval_max = 3\n"
        # NOTE: the conductors and the API write on three different Galera
        # nodes: reads wait for what the others committed (doc/install-guide.rst).
        "[database]\n"
        "mysql_wsrep_sync_wait = 3\n"
        "[DEFAULT]\n"
        f"default_log_levels = {levels}\n"
    )
