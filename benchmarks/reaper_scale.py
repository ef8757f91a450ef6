"""What one pass of the conductor's reaper costs as the cloud grows.

The reaper (:mod:`resize_sched.conductor.reaper`) lists the allocations of
every provider of this deployment, one ``GET
/resource_providers/{uuid}/allocations`` each, to find what deleted servers
and closed resizes still hold after a late write. Its cost therefore grows
with the number of hosts, not with the number of deletes; this script
measures it. For each cloud size it builds the benchmark cloud
(:func:`cloud.build_cloud`: hosts registered as the compute service does,
servers placed by direct allocation writes), marks ``--leaked`` servers
deleted in our database while Placement still holds their allocations (what
a build's claim that landed after the delete leaves), then times a pass
that gives those back and a second pass that finds nothing, printing the
Placement requests, the wall time and the time per provider.

Placement is embedded in this process on SQLite (every request serialised),
as the benchmark's default; the figures are a ceiling for one reaper against
a Placement that does nothing else.

    python3 benchmarks/reaper_scale.py --sizes 100,1000,10000
"""

from __future__ import annotations

import argparse
import datetime
import logging
import sys
import tempfile
import time
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from cloud import build_cloud

from resize_sched import conf as rs_conf
from resize_sched.conductor import reaper
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.db import models
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementInProcess


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of whole numbers: {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise argparse.ArgumentTypeError("sizes must be 1 or more")
    return sizes


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=_sizes, default=[100, 1000], help="cloud sizes, e.g. 100,1000,10000"
    )
    parser.add_argument("--per-host", type=int, default=3, help="servers per busy host (3)")
    parser.add_argument(
        "--leaked",
        type=int,
        default=20,
        help="servers marked deleted while Placement still holds them (20)",
    )
    parser.add_argument("--setup-threads", type=int, default=8)
    return parser


class _Counted:
    """Counts a client's requests by method and path shape."""

    def __init__(self, client: PlacementClient) -> None:
        self.count = 0
        real = client._request

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return real(*args, **kwargs)

        client._request = counted  # type: ignore[method-assign]


def _leak(db: Database, servers: list[str], count: int) -> list[str]:
    """Mark ``count`` servers deleted an hour ago, their allocations kept."""
    chosen = servers[:count]
    an_hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    with db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Server)
            .where(models.Server.uuid.in_(chosen))
            .values(deleted_at=an_hour_ago, status="DELETED", vm_state="deleted")
        )
    return chosen


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """One cloud of ``size`` hosts: two reaper passes' figures."""
    with tempfile.TemporaryDirectory(prefix="reaper-") as tmp:
        with PlacementInProcess(f"{tmp}/placement") as placement:
            conf = rs_conf.new_conf()
            rs_conf.parse_args(conf, [], default_config_files=[])
            placement.configure(conf)
            db = Database(f"sqlite:///{tmp}/resize_sched.sqlite")
            try:
                db.sync()
                started = time.perf_counter()
                cloud = build_cloud(
                    make_client=lambda: PlacementClient.from_conf(conf),
                    db=db,
                    deployment_name=conf.placement.deployment_name,
                    hosts=size,
                    per_host=args.per_host,
                    threads=args.setup_threads,
                    progress=lambda line: print(line, file=sys.stderr),
                )
                setup_s = time.perf_counter() - started
                leaked = _leak(db, cloud.servers, args.leaked)
                client = PlacementClient.from_conf(conf)
                counter = _Counted(client)
                manager = SimpleNamespace(deps=TaskDeps.build(conf, db, client), db=db)
                passes = []
                for _ in range(2):
                    counter.count = 0
                    started = time.perf_counter()
                    report = reaper.reap(manager, grace=0)
                    seconds = time.perf_counter() - started
                    passes.append((report, counter.count, seconds))
                still = [s for s in leaked if client.get_allocations(s).allocations]
            finally:
                db.dispose()
    first, second = passes
    return {
        "hosts": size,
        "servers": len(cloud.servers),
        "setup_s": setup_s,
        "providers": first[0].providers,
        "reaped": len(first[0].reaped),
        "still_held": len(still),
        "passes": [
            {"requests": count, "seconds": seconds, "reaped": len(report.reaped)}
            for report, count, seconds in passes
        ],
        "idle_ms_per_provider": 1000 * second[2] / max(second[0].providers, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # NOTE: the reaper's warning names every consumer it gave back.
    logging.getLogger("resize_sched").setLevel(logging.ERROR)
    rows = []
    for size in args.sizes:
        print(f"setting up {size} hosts ...", file=sys.stderr)
        rows.append(measure(size, args))
    print()
    print(
        f"{'hosts':>7} {'servers':>8} {'leaked':>7} {'reaped':>7} {'left':>5} "
        f"{'pass 1 req':>11} {'pass 1 s':>9} {'pass 2 req':>11} {'pass 2 s':>9} "
        f"{'ms/provider':>12}"
    )
    for row in rows:
        one, two = row["passes"]
        print(
            f"{row['hosts']:>7} {row['servers']:>8} {args.leaked:>7} {row['reaped']:>7} "
            f"{row['still_held']:>5} {one['requests']:>11} {one['seconds']:>9.2f} "
            f"{two['requests']:>11} {two['seconds']:>9.2f} "
            f"{row['idle_ms_per_provider']:>12.2f}"
        )
    failed = [row["hosts"] for row in rows if row["still_held"] or row["reaped"] != args.leaked]
    if failed:
        print(f"the reaper left leaked allocations at sizes {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
