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

import json
import logging
import os
import platform
import sys
import time
from typing import Any

from bench import Bench, progress
from consistency import check_consistency
from figures import Figures, MoveFigures
from options import STRATEGIES, parse_args
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
from worker import ResizeWorker

#: What schedule_timeline.py and the smoke test take from here.
__all__ = ["STRATEGIES", "Bench", "ResizeWorker", "check_consistency", "main", "parse_args"]


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
        progress(f"{hosts} hosts: setting up...")
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
                    progress(f"{hosts} hosts: {strategy}, prefer_same_host={psh}...")
                    by_size[hosts].append(bench.run(strategy, psh))
            if n == 0 and args.moves > 0:
                for strategy in strategies:
                    progress(f"{hosts} hosts: {strategy}, moves...")
                    moves.append(bench.run_moves(strategy))
            if n == 0 and args.concurrency:
                saved = args.resizes
                args.resizes = args.concurrency_resizes or 2 * saved
                for strategy in strategies:
                    for subset in args.concurrency_subsets or [None]:
                        for workers in args.concurrency:
                            progress(
                                f"{hosts} hosts: {strategy}, {workers} worker(s)"
                                + (f", host_subset_size {subset}" if subset else "")
                                + "..."
                            )
                            concurrency.append(bench.run(strategy, False, workers, subset))
                args.resizes = saved
    full_stack: dict[str, Any] | None = None
    if args.full_stack:
        import fullstack

        full_stack = fullstack.run(args, progress)

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
        progress(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
