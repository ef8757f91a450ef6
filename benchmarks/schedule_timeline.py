"""Where a schedule's own time goes: its transactions, statements and requests.

``resize_bench.py`` gives our own time per schedule and claim (outside
Placement requests) and the part of it with a transaction of our database
open. This script splits that time further, for each configuration, by
timing every transaction, SQL statement and Placement request of the
schedules it runs, in the process, on the calling thread:

* opening a transaction: from asking for it to its first statement (pool
  checkout and its ping, the session, the first statement built);
* statements: from a statement's send to its result read;
* between statements: our Python inside a transaction (rows loaded, the
  next statement built);
* commits: the driver's ``COMMIT`` of a write transaction, sent and
  answered (the server's flush to disk);
* ending a transaction: the rest from its last statement to its end (the
  session's own work around the commit, the connection given back);
* outside transactions: the rest of our own time (scheduling, strategies,
  the client's own work).

Time with a Placement request in flight (on any thread) is Placement's, as
in ``resize_bench.py``, and counts nowhere here. It takes the same cloud
options as ``resize_bench.py`` (``--hosts``, ``--placement-db``, ``--db``,
``--strategies``, ``--same-host``, ``--resizes``)::

    python3 benchmarks/schedule_timeline.py --hosts 100 --resizes 30 \\
        --placement-db mysql+pymysql://root@127.0.0.1:3306/test \\
        --db mysql+pymysql://root@127.0.0.1:3306/test
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from bench import Bench
from figures import Figures
from options import parse_args
from worker import ResizeWorker

#: The parts of our own time, in the order printed.
PARTS = (
    "opening a transaction",
    "statements",
    "between statements",
    "commits",
    "ending a transaction",
    "outside transactions",
)


class Timeline:
    """Events of one schedule: Placement requests of every thread, and the
    transactions and statements of the thread that schedules."""

    def __init__(self) -> None:
        self.events: list[tuple[float, str]] = []
        self.thread: int | None = None

    def mark(self, kind: str, *, any_thread: bool = False) -> None:
        if any_thread or threading.get_ident() == self.thread:
            self.events.append((time.perf_counter(), kind))

    def parts(self) -> dict[str, float]:
        """Milliseconds of our own time per part (see :data:`PARTS`)."""
        out = dict.fromkeys(PARTS, 0.0)
        requests = 0
        in_tx = False
        previous = ""
        events = self.events
        # NOTE: what comes next on the scheduling thread, requests (of any
        # thread) passed over: tells time between statements from the end.
        nexts = [""] * len(events)
        following = ""
        for i in range(len(events) - 1, -1, -1):
            nexts[i] = following
            if events[i][1] not in ("request>", "request<"):
                following = events[i][1]
        for i, ((t0, kind), (t1, _)) in enumerate(zip(events, events[1:], strict=False)):
            if kind == "request>":
                requests += 1
            elif kind == "request<":
                requests -= 1
            elif kind == "tx>":
                in_tx = True
            elif kind == "tx<":
                in_tx = False
            if kind not in ("request>", "request<"):
                previous = kind
            if requests:
                continue
            if not in_tx:
                part = "outside transactions"
            elif previous == "tx>":
                part = "opening a transaction"
            elif previous == "sql>":
                part = "statements"
            elif previous == "commit>":
                part = "commits"
            elif previous == "sql<" and nexts[i] == "sql>":
                part = "between statements"
            else:
                part = "ending a transaction"
            out[part] += (t1 - t0) * 1000
        return out


def _instrument(bench: Bench, timeline: Timeline) -> None:
    """Mark every transaction and statement of the bench's database."""
    db = bench.db
    assert db is not None
    for name in ("_reader", "_writer"):
        original = getattr(db, name)

        def wrapped(original: Callable[[], Any] = original) -> Any:
            @contextlib.contextmanager
            def transaction() -> Iterator[Any]:
                timeline.mark("tx>")
                try:
                    with original() as session:
                        yield session
                finally:
                    timeline.mark("tx<")

            return transaction()

        setattr(db, name, wrapped)
    sa.event.listen(db.engine, "before_cursor_execute", lambda *_: timeline.mark("sql>"))
    sa.event.listen(db.engine, "after_cursor_execute", lambda *_: timeline.mark("sql<"))
    dialect = db.engine.dialect
    do_commit = dialect.do_commit

    def commit(dbapi_connection: Any) -> None:
        timeline.mark("commit>")
        try:
            do_commit(dbapi_connection)
        finally:
            timeline.mark("commit<")

    dialect.do_commit = commit  # type: ignore[method-assign]


def _timed_client(client: Any, timeline: Timeline) -> None:
    original = client._request

    def request(*args: Any, **kwargs: Any) -> Any:
        timeline.mark("request>", any_thread=True)
        try:
            return original(*args, **kwargs)
        finally:
            timeline.mark("request<", any_thread=True)

    client._request = request


def run(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Run the schedules and print the table; return configuration ->
    part -> mean milliseconds per schedule (with ``own`` and ``schedules``)."""
    args = parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    for hosts in args.sizes:
        bench = Bench(args, hosts)
        with bench.up():
            timeline = Timeline()
            _instrument(bench, timeline)
            for strategy in args.strategies.split(","):
                for prefer in {"off": [False], "on": [True], "both": [False, True]}[
                    args.same_host
                ]:
                    label = f"{hosts} {strategy}{' +psh' if prefer else ''}"
                    results[label] = _configuration(bench, timeline, strategy, prefer)
    _print(results)
    return results


def _configuration(
    bench: Bench, timeline: Timeline, strategy: str, prefer: bool
) -> dict[str, float]:
    assert bench.cloud is not None
    deps = bench._deps(strategy, prefer, None)
    _timed_client(deps.client, timeline)
    servers = bench._take_servers(bench.args.resizes + 1)
    worker = ResizeWorker(
        deps, servers, bench.cloud.flavors, Figures(strategy, prefer), bench.db_timer
    )
    worker.cycle(0, record=False)  # a fresh scheduler's first schedule, apart
    schedule = worker.driver.tasks.schedule
    samples: list[dict[str, float]] = []

    def timed(migration_uuid: str) -> Any:
        timeline.events.clear()
        timeline.thread = threading.get_ident()
        timeline.mark("start")
        try:
            return schedule(migration_uuid)
        finally:
            timeline.mark("end")
            timeline.thread = None
            samples.append(timeline.parts())

    worker.driver.tasks.schedule = timed  # type: ignore[method-assign]
    for n in range(1, bench.args.resizes + 1):
        worker.cycle(n)
    worker.driver.tasks.schedule = schedule  # type: ignore[method-assign]
    means = {part: statistics.fmean(s[part] for s in samples) for part in PARTS}
    means["own"] = statistics.fmean(sum(s.values()) for s in samples)
    means["schedules"] = len(samples)
    return means


def _print(results: dict[str, dict[str, float]]) -> None:
    print("Our own time per schedule and claim, by part (ms, means)")
    header = f"{'configuration':<28}" + "".join(f"{p:>23}" for p in PARTS) + f"{'own':>8}"
    print(header)
    print("-" * len(header))
    for label, means in results.items():
        row = f"{label:<28}" + "".join(f"{means[p]:>23.2f}" for p in PARTS)
        print(row + f"{means['own']:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
