"""The chaos soak's command line and the daemons' configuration it implies."""

from __future__ import annotations

import argparse
import os
import random
import re

from tests.chaos.clients import MOVES
from tests.chaos.proxy import KINDS

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
#: The flavors the clients create with and resize between: name, vcpus, MB, GB.
FLAVORS = (
    ("chaos-tiny", 1, 512, 5),
    ("chaos-small", 1, 1024, 10),
    ("chaos-medium", 2, 2048, 20),
    ("chaos-large", 4, 4096, 40),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.chaos.soak",
        description="Run resize_sched's real multi-process deployment under random "
        "Placement faults and SIGKILLs with concurrent clients, then check Placement "
        "against the database. See doc/chaos-soak.rst.",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seeds every random choice (default: a random seed, printed)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=90.0,
        help="seconds of chaos, start-up and checks not counted (default 90)",
    )
    parser.add_argument(
        "--strategy",
        choices=(*STRATEGIES, "seed"),
        default="seed",
        help="the deployment's claim strategy; 'seed' (default) picks it "
        "from the seed (seed mod 3 in the order legacy, drop_and_reclaim, "
        "max_flavor)",
    )
    parser.add_argument("--clients", type=int, default=6, help="concurrent clients (6)")
    parser.add_argument(
        "--servers-per-client", type=int, default=3, help="servers each client keeps at most (3)"
    )
    parser.add_argument("--computes", type=int, default=3, help="compute daemons (3)")
    parser.add_argument(
        "--moves",
        default=",".join(MOVES),
        help="the moves in the clients' mix, comma-separated, or 'none' "
        f"({','.join(MOVES)}; shelve brings offload and unshelve with it)",
    )
    parser.add_argument(
        "--shelved-offload-time",
        type=int,
        default=15,
        help="[DEFAULT] shelved_offload_time for the soak: a shelved server is "
        "offloaded by the sweep after this many seconds unless a client offloads "
        "or unshelves it first; 0 offloads at once, -1 never (15)",
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        default=0.05,
        help="chance that one Placement request gets a fault (0.05)",
    )
    parser.add_argument(
        "--faults",
        default=",".join(KINDS),
        help=f"the Placement fault kinds to draw from, comma-separated ({','.join(KINDS)})",
    )
    parser.add_argument(
        "--kill-every",
        type=float,
        nargs=2,
        default=(8.0, 20.0),
        metavar=("MIN", "MAX"),
        help="seconds between SIGKILLs, drawn uniformly (8 20)",
    )
    parser.add_argument(
        "--placement-timeout",
        type=float,
        default=4.0,
        help="the daemons' [placement] timeout; delay and hold faults "
        "keep a request 2 s longer (4)",
    )
    parser.add_argument(
        "--stuck-after", type=int, default=20, help="[conductor] stuck_after for the soak (20)"
    )
    parser.add_argument(
        "--sweep-interval",
        type=int,
        default=2,
        help="[conductor] stuck_check_interval for the soak (2)",
    )
    parser.add_argument(
        "--reap-after",
        type=int,
        default=30,
        help="[conductor] reap_after: how long after a delete or the end of a resize the "
        "sweep gives back late writes; above --placement-timeout times its attempts (30)",
    )
    parser.add_argument(
        "--reap-interval",
        type=int,
        default=5,
        help="[conductor] reap_interval for the soak (5)",
    )
    parser.add_argument(
        "--quiesce-timeout",
        type=float,
        default=240.0,
        help="seconds to wait for everything to settle after the chaos (240)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="GROUP.NAME=VALUE",
        help="one more option in every daemon's config (repeatable)",
    )
    parser.add_argument(
        "--transport-url",
        default=os.environ.get("RESIZE_SCHED_TEST_RABBIT_URL", ""),
        help="RabbitMQ (default $RESIZE_SCHED_TEST_RABBIT_URL)",
    )
    parser.add_argument(
        "--db-url",
        default=os.environ.get("RESIZE_SCHED_TEST_MYSQL_URL", ""),
        help="a MariaDB/MySQL server for the scratch databases "
        "(default $RESIZE_SCHED_TEST_MYSQL_URL)",
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="where configs and logs go (default: a temporary directory, "
        "removed after a clean run, kept and printed otherwise)",
    )
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1_000_000)
    args.faults = tuple(k.strip() for k in args.faults.split(",") if k.strip())
    unknown = set(args.faults) - set(KINDS)
    if unknown or not args.faults:
        parser.error(f"--faults: unknown kinds {sorted(unknown)}; known: {','.join(KINDS)}")
    args.moves = tuple(m.strip() for m in args.moves.split(",") if m.strip() not in ("", "none"))
    unknown = set(args.moves) - set(MOVES)
    if unknown:
        parser.error(f"--moves: unknown moves {sorted(unknown)}; known: {','.join(MOVES)}")
    if args.strategy == "seed":
        args.strategy = STRATEGIES[args.seed % 3]
    return args


def config_text(args: argparse.Namespace) -> str:
    """The soak's own options, then each ``--option``."""
    groups: dict[str, dict[str, str]] = {
        "conductor": {
            "stuck_check_interval": str(args.sweep_interval),
            "stuck_after": str(args.stuck_after),
            "reap_after": str(args.reap_after),
            "reap_interval": str(args.reap_interval),
        },
        "DEFAULT": {
            "report_interval": "5",
            "shelved_offload_time": str(args.shelved_offload_time),
        },
    }
    for option in args.option:
        match = re.fullmatch(r"([A-Za-z_]+)\.([A-Za-z0-9_]+)=(.*)", option)
        if match is None:
            raise SystemExit(f"--option {option!r}: expected GROUP.NAME=VALUE")
        groups.setdefault(match[1], {})[match[2]] = match[3]
    return "".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
        for group, values in groups.items()
    )
