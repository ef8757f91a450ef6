"""The benchmark's tables: strategies side by side, scaling, concurrency."""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from external_placement import backend_of
from figures import Figures, MoveFigures, _per, _percentile
from moves import NOVA, PHASES


def _mean(values: list[int]) -> str:
    return f"{statistics.mean(values):.2f}" if values else "-"


def _ms(values: list[float], pct: float = 50) -> str:
    return f"{_percentile(values, pct):.1f}" if values else "-"


def _consistent(f: Figures) -> str:
    c = f.consistency
    if c is None:
        return "-"
    carried = f" +{c.carried_over} earlier" if c.carried_over else ""
    return ("yes" if c.ok else f"NO ({c.violations})") + carried


def _answers(f: Figures, status: str) -> str:
    if f.placement_log is None:
        return "-"
    return str(
        sum(n for key, n in f.placement_log.answers.items() if key.split()[1].startswith(status))
    )


def describe_placement(args: argparse.Namespace) -> str:
    if args.placement_db:
        backend = backend_of(args.placement_db)
        return (
            f"external on {backend}, {args.placement_processes} processes x "
            f"{args.placement_threads} threads (waitress)"
            + (
                f", allocation_conflict_retry_count={args.placement_conflict_retries}"
                if args.placement_conflict_retries is not None
                else ""
            )
        )
    if args.http:
        return "over HTTP (SQLite, one wsgiref thread)"
    return "in-process (SQLite, requests serialised)"


def describe_db(args: argparse.Namespace) -> str:
    if args.db:
        return f"{backend_of(args.db)} (scratch database)"
    return "SQLite file"


#: What the per-strategy tables' rows on our own time mean.
LEGEND = (
    "ours = schedule+claim minus the wall time with a Placement request in flight; "
    "in our database = of ours, the wall time with one of our database transactions open "
    "(from checkout to commit, the ORM's work inside included) and no Placement request in "
    "flight (a read on the scheduler's pool during a query is Placement's time); timed over "
    "every thread, so shown for 1-worker runs only; ours outside the database = the rest "
    "(scheduling, strategies, the client's own work)"
)


ROWS: list[tuple[str, Callable[[Figures], str]]] = [
    ("Placement requests, schedule->claim (mean)", lambda f: _mean(f.schedule_rt)),
    ("Placement requests, schedule->claim (max)", lambda f: str(max(f.schedule_rt, default=0))),
    ("our database transactions, schedule->claim (mean)", lambda f: _mean(f.db_transactions)),
    ("  of which commits (mean)", lambda f: _mean(f.db_commits)),
    ("  SQL statements in them (mean)", lambda f: _mean(f.db_statements)),
    ("Placement requests per confirm (mean)", lambda f: _mean(f.confirm_rt)),
    ("Placement requests per revert (mean)", lambda f: _mean(f.revert_rt)),
    ("first schedule of a process: requests", lambda f: str(f.first_rt)),
    ("first schedule of a process: ms", lambda f: f"{f.first_ms or 0:.1f}"),
    ("floor: candidates + claim p50 (ms)", lambda f: _ms(f.floor.total_ms)),
    ("floor: candidates query p50 (ms)", lambda f: _ms(f.floor.query_ms)),
    ("schedule+claim p50 (ms)", lambda f: _ms(f.latency_ms)),
    ("schedule+claim p95 (ms)", lambda f: _ms(f.latency_ms, 95)),
    ("schedule+claim p50 / floor p50", lambda f: f"{f.ratio():.2f}x"),
    ("  inside Placement p50 (ms)", lambda f: _ms(f.placement_ms)),
    ("  our own time p50 (ms)", lambda f: _ms(f.own_ms)),
    ("    in our database p50 (ms)", lambda f: _ms(f.db_ms)),
    ("    ours outside the database p50 (ms)", lambda f: _ms(f.own_outside_db_ms)),
    ("  our own time p95 (ms)", lambda f: _ms(f.own_ms, 95)),
    ("resizes that stayed on their host", lambda f: f"{f.same_host}"),
    ("in-place resize p50 (ms)", lambda f: _ms(f.in_place_ms)),
    ("resizes with no valid host", lambda f: f"{f.no_host}"),
    ("fits nowhere: Placement requests", lambda f: _mean(f.failure_rt)),
    ("fits nowhere: p50 (ms)", lambda f: _ms(f.failure_ms)),
    ("fits nowhere: verdict", lambda f: ",".join(sorted(f.failure_kinds)) or "-"),
    ("bare candidates query, no fit p50 (ms)", lambda f: _ms(f.floor.empty_query_ms)),
    ("fits nowhere / floor's candidates query", lambda f: _failure_ratio(f)),
    ("resize cycles per second", lambda f: f"{f.cycles / f.elapsed_s:.1f}"),
    ("resize cycles run", lambda f: f"{f.cycles}"),
    ("  with an error (below)", lambda f: f"{f.failed_cycles}"),
    ("claim writes refused: capacity", lambda f: f"{f.capacity_refusals}"),
    ("claim writes refused: generation", lambda f: f"{f.generation_conflicts}"),
    (
        "claim writes refused: other",
        lambda f: str(sum(f.refused.values()) - f.capacity_refusals - f.generation_conflicts),
    ),
    ("Placement answers 409 (server log)", lambda f: _answers(f, "409")),
    ("Placement answers 5xx (server log)", lambda f: _answers(f, "5")),
    (
        "hosts checked at the end",
        lambda f: str(f.consistency.hosts_checked if f.consistency else "-"),
    ),
    ("consistent (violations)", _consistent),
]


def _failure_ratio(f: Figures) -> str:
    query = _percentile(f.floor.query_ms, 50)
    if not f.failure_ms or not query:
        return "-"
    return f"{_percentile(f.failure_ms, 50) / query:.2f}x"


def print_table(title: str, figures: list[Figures], rows: list[tuple[str, Callable]]) -> None:
    """One column per configuration, side by side."""
    print(f"\n{title}")
    width = max(len(label) for label, _ in rows)
    header = " " * width + "".join(f"  {f.label:>20}" for f in figures)
    print(header)
    print("-" * len(header))
    for label, fn in rows:
        print(f"{label:<{width}}" + "".join(f"  {fn(f):>20}" for f in figures))


def print_details(figures: list[Figures]) -> None:
    """Errors, unusual refusals, Placement's warnings and inconsistencies."""
    for f in figures:
        where = f"{f.label}, {f.hosts} hosts, {f.workers} worker(s)"
        if f.errors:
            print(f"\n{where}: errors by class")
            for name, count in f.errors.most_common():
                print(f"  {name}: {count}  (first: {f.error_examples[name]})")
        others = {k: v for k, v in f.refused.items() if k != "ClaimRefused"}
        if others:
            print(f"\n{where}: claim writes refused other than for capacity")
            for name, count in sorted(others.items()):
                print(f"  {name}: {count}  (first: {f.refused_examples[name]})")
        c = f.consistency
        if c is None or c.ok:
            continue
        print(f"\n{where}: state after the run is not clean")
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


def print_scaling(by_size: dict[int, list[Figures]]) -> None:
    """One line per size and configuration: the figures issue 11 tracks."""
    print(
        "\nScaling (ms are p50; ours = schedule+claim minus time inside Placement; "
        "db = of ours, with a transaction of our database open; commits/statements "
        "= our database's per schedule+claim, means)"
    )
    head = (
        f"{'hosts':>6}  {'configuration':<22}{'floor':>7}{'s+c':>7}{'ratio':>7}"
        f"{'in Pl.':>8}{'ours':>7}{'db':>7}{'in-place':>9}{'fail req':>9}{'fail ms':>9}"
        f"{'bare q':>8}{'reqs':>6}{'commits':>8}{'stmts':>6}"
    )
    print(head)
    print("-" * len(head))
    for size, figures in by_size.items():
        for f in figures:
            print(
                f"{size:>6}  {f.label:<22}{_ms(f.floor.total_ms):>7}{_ms(f.latency_ms):>7}"
                f"{f.ratio():>6.2f}x{_ms(f.placement_ms):>8}{_ms(f.own_ms):>7}{_ms(f.db_ms):>7}"
                f"{_ms(f.in_place_ms):>9}{_mean(f.failure_rt):>9}{_ms(f.failure_ms):>9}"
                f"{_ms(f.floor.query_ms):>8}{_mean(f.schedule_rt):>6}"
                f"{_mean(f.db_commits):>8}{_mean(f.db_statements):>6}"
            )


def print_concurrency(figures: list[Figures]) -> None:
    """Throughput, p50, refusals and conflicts per resize by worker count."""
    if not figures:
        return
    print(f"\nConcurrency on {figures[0].hosts} hosts (workers share the hosts; per resize)")
    head = (
        f"{'configuration':<28}{'workers':>8}{'resizes/s':>10}{'x 1 worker':>11}"
        f"{'p50 ms':>8}{'p95 ms':>8}{'refused':>9}{'conflicts':>10}{'errors':>8}  consistent"
    )
    print(head)
    print("-" * len(head))
    base: dict[str, float] = {}
    for f in figures:
        rate = f.cycles / f.elapsed_s if f.elapsed_s else 0.0
        if f.workers == 1:
            base[f.label] = rate
        speedup = f"{rate / base[f.label]:.2f}x" if base.get(f.label) else "-"
        refused = _per(f.capacity_refusals, f.cycles)
        conflicts = _per(f.generation_conflicts, f.cycles)
        print(
            f"{f.label:<28}{f.workers:>8}{rate:>10.1f}{speedup:>11}{_ms(f.latency_ms):>8}"
            f"{_ms(f.latency_ms, 95):>8}{refused:>9}{conflicts:>10}"
            f"{sum(f.errors.values()):>8}  {_consistent(f)}"
        )


def print_moves(figures: list[MoveFigures]) -> None:
    """Placement requests per phase of each move, a column per strategy,
    beside Nova 34.0.0's for the same move (``moves.NOVA``); a phase where
    ours makes more than Nova's is marked."""
    if not figures:
        return
    print(
        "\nPlacement requests per move (mean; ours counted by the client as the resize "
        "rows are; Nova 34.0.0's counted in its functional harness, contrib/nova; "
        "! = more than Nova)"
    )
    width = max(len(f"{move}: {phase}") for move, phase in PHASES)
    header = f"{'':<{width}}" + "".join(f"  {f.strategy:>18}" for f in figures) + "  Nova 34.0.0"
    print(header)
    print("-" * len(header))
    for key in PHASES:
        nova = NOVA.get(key)
        cells = []
        for f in figures:
            mean = f.mean(key)
            mark = "!" if mean is not None and nova is not None and mean > nova else " "
            cells.append(f"  {_mean(f.requests.get(key, [])):>17}{mark}")
        label = f"{key[0]}: {key[1]}"
        print(f"{label:<{width}}" + "".join(cells) + f"  {nova if nova is not None else '-':>11}")
    for f in figures:
        consistent = "yes" if f.consistency is None or f.consistency.ok else "NO"
        line = f"{f.strategy}: {f.moves} moves in {f.elapsed_s:.1f} s, consistent: {consistent}"
        if f.errors:
            line += "; errors: " + ", ".join(
                f"{name} x{count} ({f.error_examples[name]})" for name, count in f.errors.items()
            )
        print(line)
