"""What the filters and weighers cost per scheduling request as the cloud grows.

For each cloud size N this script records N compute nodes with their
services in a SQLite database (and, for the zone and group rows, aggregates
with ``availability_zone`` metadata and servers of an anti-affinity group),
then hands the scheduler's filter and weigher chains the candidates
Placement would return: ``min(N, [scheduler] max_placement_results)``
hosts (1000 by default). It measures, per request (median of ``--repeat``):

* the host states' build: the queries for all candidates together;
* the filters' and weighers' own time on those host states.

No Placement is involved: building host states and filtering make no
Placement request (``tests/functional/scheduler/test_filters.py`` counts
them), so a resize costs the requests it did before.

    python3 benchmarks/filter_bench.py --sizes 100,1000,10000
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace

from external_placement import ScratchDatabase

from resize_sched import conf as rs_conf
from resize_sched import resources as rs
from resize_sched.db import models
from resize_sched.db.api import Database
from resize_sched.db.host_api import COMPUTE_BINARY
from resize_sched.scheduler.filters import FilterChain
from resize_sched.scheduler.host_state import build_host_states
from resize_sched.scheduler.request import Destination, GroupPolicy, SchedulingRequest
from resize_sched.scheduler.weights import WeigherChain

INVENTORY = {
    "VCPU": {"total": 64, "reserved": 0, "allocation_ratio": 4.0},
    "MEMORY_MB": {"total": 262144, "reserved": 512, "allocation_ratio": 1.0},
    "DISK_GB": {"total": 2000, "reserved": 0, "allocation_ratio": 1.0},
}


def _populate(db: Database, size: int) -> tuple[list[str], list[str]]:
    """N nodes and services; every tenth host in zone az1; a group member on
    every other host. Returns (provider uuids, group member uuids)."""
    now = models.utcnow()
    uuids = [str(uuid.uuid4()) for _ in range(size)]
    members = []
    with db._writer() as session:
        zone = models.Aggregate(uuid=str(uuid.uuid4()), name="az1")
        session.add(zone)
        session.flush()
        session.add(
            models.AggregateMetadata(aggregate_id=zone.id, key="availability_zone", value="az1")
        )
        for i, rp in enumerate(uuids):
            host = f"host{i}"
            session.add(
                models.ComputeNode(
                    uuid=rp,
                    host=host,
                    hypervisor_hostname=host,
                    inventory=INVENTORY,
                    failed_builds=i % 7 == 0,
                )
            )
            session.add(
                models.Service(
                    uuid=str(uuid.uuid4()), host=host, binary=COMPUTE_BINARY, last_seen_up=now
                )
            )
            if i % 10 == 0:
                session.add(models.AggregateHost(aggregate_id=zone.id, host=host))
            if i % 2 == 0:
                member = str(uuid.uuid4())
                members.append(member)
                session.add(
                    models.Server(
                        uuid=member,
                        name="m",
                        project_id="p",
                        user_id="u",
                        flavor={},
                        host=host,
                        node=host,
                        rp_uuid=rp,
                        vm_state="active",
                        status="ACTIVE",
                    )
                )
    return uuids, members


def _measure(db, conf, dests, request, repeat):
    filters = FilterChain(conf, conf.filter_scheduler.enabled_filters)
    weighers = WeigherChain(conf, conf.filter_scheduler.weight_classes)
    build, judge, kept = [], [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        needs = filters.needs_for(request) | weighers.needs_for(request)
        states = build_host_states(db, dests, needs)
        built = time.perf_counter()
        passed, _ = filters.run(states, request)
        weights = weighers.weigh(passed, request)
        sorted(range(len(passed)), key=lambda i: -weights[i])
        done = time.perf_counter()
        build.append((built - start) * 1000)
        judge.append((done - built) * 1000)
        kept = len(passed)
    return statistics.median(build), statistics.median(judge), kept


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--db",
        metavar="URL",
        help="record the nodes in a scratch database on this server "
        "(mysql+pymysql://..., postgresql+psycopg://...; default: SQLite)",
    )
    parser.add_argument("--cases", default="default,zone,group", help="cases to run")
    parser.add_argument(
        "--profile", metavar="PATH", help="cProfile the runs, stats written to PATH"
    )
    args = parser.parse_args(argv)
    profiler = cProfile.Profile() if args.profile else None
    print(
        f"{'hosts':>6} {'candidates':>10} {'case':<8} {'kept':>5} "
        f"{'host states ms':>15} {'filters+weighers ms':>20}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(tempfile.TemporaryDirectory())
            url = f"sqlite:///{tmp}/bench.sqlite"
            if args.db:
                url = stack.enter_context(ScratchDatabase(args.db, tmp)).url
            db = Database(url)
            db.sync()
            conf = rs_conf.new_conf()
            rs_conf.parse_args(conf, [], default_config_files=[])
            uuids, members = _populate(db, size)
            limit = conf.scheduler.max_placement_results
            dests = [
                Destination(
                    rp,
                    f"host{i}",
                    {rp: {}},
                    free={"VCPU": 200, "MEMORY_MB": 1000 + i, "DISK_GB": 1500 - i % 100},
                    # NOTE: as the scheduler learns them, from the summaries
                    total={rc: rs.capacity(record) for rc, record in INVENTORY.items()},
                )
                for i, rp in enumerate(uuids[:limit])
            ]
            base = SchedulingRequest(destination_request={"VCPU": 1}, server_uuid="me")
            group = GroupPolicy("g", "anti-affinity", {}, frozenset({"me", *members}))
            cases = [
                ("default", base, None),
                ("zone", replace(base, availability_zone="az1"), ["AvailabilityZoneFilter"]),
                ("group", replace(base, group=group), None),
            ]
            wanted = args.cases.split(",")
            for name, request, extra in cases:
                if name not in wanted:
                    continue
                if extra:
                    conf.set_override(
                        "enabled_filters",
                        [*conf.filter_scheduler.enabled_filters, *extra],
                        group="filter_scheduler",
                    )
                if profiler is not None:
                    profiler.enable()
                build, judge, kept = _measure(db, conf, dests, request, args.repeat)
                if profiler is not None:
                    profiler.disable()
                conf.clear_override("enabled_filters", group="filter_scheduler")
                print(
                    f"{size:>6} {len(dests):>10} {name:<8} {kept:>5} {build:>15.1f} {judge:>20.2f}"
                )
            db.dispose()
    if profiler is not None:
        profiler.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
