"""What the conductor's reaper costs as the cloud grows.

The reaper (:mod:`resize_sched.conductor.reaper`) has two ways of finding
what deleted servers and closed resizes still hold after a late write:

* its **pass**, every ``[conductor] reap_interval``: one ``GET
  /allocations/{consumer}`` for each consumer deleted or closed since the
  previous pass, and one write for each that holds something;
* its **scan**, every ``[conductor] reap_scan_interval`` (a day by default):
  one ``GET /resource_providers/{uuid}/allocations`` per provider of this
  deployment, as every pass did before.

For each cloud size this script builds the benchmark cloud
(:func:`cloud.build_cloud`: hosts registered as the compute service does,
servers placed by direct allocation writes), marks ``--leaked`` servers
deleted in our database while Placement still holds their allocations (what
a build's claim that landed after the delete leaves) and measures, in
Placement requests and wall time:

1. the scan that gives them back, and an idle scan (the old pass);
2. with ``--leaked`` more: the pass that gives them back; the next pass,
   idle (nothing deleted since); and a pass over the same deleted servers
   again, which now hold nothing (what each recent delete costs a pass);
3. with ``--leaked`` more: three conductors each running their sweep once
   in the same interval, under the sweep's lease: one pass in all.

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
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from cloud import build_cloud

from resize_sched import conf as rs_conf
from resize_sched.conductor import reaper
from resize_sched.conductor.lease import Lease
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


def _leak(db: Database, servers: list[str], when: datetime.datetime) -> list[str]:
    """Mark ``servers`` deleted at ``when``, their allocations kept."""
    with db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Server)
            .where(models.Server.uuid.in_(servers))
            .values(deleted_at=when, status="DELETED", vm_state="deleted")
        )
    return servers


def _timed(counter: _Counted, run: Callable[[], Any]) -> tuple[Any, int, float]:
    counter.count = 0
    started = time.perf_counter()
    result = run()
    return result, counter.count, time.perf_counter() - started


def _figures(report: Any, count: int, seconds: float) -> dict[str, Any]:
    reaped = len(report.reaped) if report is not None else 0
    return {"requests": count, "seconds": seconds, "reaped": reaped}


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """One cloud of ``size`` hosts: the scan's, the pass's and three conductors' figures."""
    with tempfile.TemporaryDirectory(prefix="reaper-") as tmp:
        with PlacementInProcess(f"{tmp}/placement") as placement:
            conf = rs_conf.new_conf()
            rs_conf.parse_args(conf, [], default_config_files=[])
            placement.configure(conf)
            conf.set_override("reap_after", 0, group="conductor")
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
                client = PlacementClient.from_conf(conf)
                counter = _Counted(client)
                deps = TaskDeps.build(conf, db, client)

                def conductor(host: str) -> SimpleNamespace:
                    return SimpleNamespace(deps=deps, db=db, lease=Lease(db, host, 60), host=host)

                manager = conductor("bench")
                batches = [
                    cloud.servers[i * args.leaked : (i + 1) * args.leaked] for i in range(3)
                ]
                now = datetime.datetime.now(datetime.UTC)
                hour = datetime.timedelta(hours=1)
                rows: dict[str, dict[str, Any]] = {}
                # 1. The scan (every pass before), giving back, then idle.
                _leak(db, batches[0], now - 2 * hour)
                rows["scan"] = _figures(*_timed(counter, lambda: reaper.scan(manager, grace=0)))
                rows["scan, idle"] = _figures(
                    *_timed(counter, lambda: reaper.scan(manager, grace=0))
                )
                # 2. The pass over what was deleted since the last one.
                since = now - 1.5 * hour
                _leak(db, batches[1], now - hour)
                first, count, seconds = _timed(
                    counter, lambda: reaper.reap(manager, grace=0, since=since)
                )
                rows["pass"] = _figures(first, count, seconds)
                rows["pass, idle"] = _figures(
                    *_timed(counter, lambda: reaper.reap(manager, grace=0, since=first.until))
                )
                rows["pass, again"] = _figures(
                    *_timed(counter, lambda: reaper.reap(manager, grace=0, since=since))
                )
                # 3. Three conductors sweep once each in one interval.
                conductors = [conductor(f"conductor{i}") for i in range(1, 4)]
                assert conductors[0].lease.hold()
                conductors[0].lease.record(reaped_until=datetime.datetime.now(datetime.UTC))
                _leak(db, batches[2], datetime.datetime.now(datetime.UTC))
                time.sleep(0.01)  # the leak is older than the pass's end

                def interval() -> Any:
                    done = SimpleNamespace(reaped={})
                    for each in conductors:
                        if each.lease.hold():
                            report = reaper.reap_if_due(each)
                            done.reaped.update(report.reaped if report else {})
                    return done

                conf.set_override("reap_interval", 1, group="conductor")
                time.sleep(1)
                rows["3 conductors"] = _figures(*_timed(counter, interval))
                still = [
                    s for batch in batches for s in batch if client.get_allocations(s).allocations
                ]
            finally:
                db.dispose()
    return {
        "hosts": size,
        "servers": len(cloud.servers),
        "setup_s": setup_s,
        "still_held": len(still),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # NOTE: the reaper's warning names every consumer it gave back.
    logging.getLogger("resize_sched").setLevel(logging.ERROR)
    results = []
    for size in args.sizes:
        print(f"setting up {size} hosts ...", file=sys.stderr)
        results.append(measure(size, args))
    print()
    print(f"{'hosts':>7} {'servers':>8} {'what':<14} {'requests':>9} {'seconds':>8} {'reaped':>7}")
    for result in results:
        for what, row in result["rows"].items():
            print(
                f"{result['hosts']:>7} {result['servers']:>8} {what:<14} {row['requests']:>9} "
                f"{row['seconds']:>8.2f} {row['reaped']:>7}"
            )
    failed = [
        r["hosts"]
        for r in results
        if r["still_held"]
        or any(
            r["rows"][what]["reaped"] != args.leaked for what in ("scan", "pass", "3 conductors")
        )
    ]
    if failed:
        print(f"the reaper left leaked allocations at sizes {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
