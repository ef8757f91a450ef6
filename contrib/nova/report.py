"""Summarise a contrib/nova/run.sh test run: counts per group and figures.

Reads the ``subunit2csv`` output of the stestr runs (columns: test, status,
start_time, stop_time), sorts every test into the first group whose regular
expression matches its id (as stestr does, with ``re.search``), and prints
passed/failed/skipped per group. Then prints the Placement request counts
that ``test_placement_request_counts.py`` recorded. Exits 1 if a test failed
or a group ran no test.

Usage: report.py --mode MODE --counts FILE CSV... -- NAME=REGEX...
"""

import argparse
import collections
import csv
import json
import re
import sys

PASSED = {"success", "xfail"}
SKIPPED = {"skip"}


def read_results(paths: list[str]) -> dict[str, str]:
    """Map every test id to its status."""
    results = {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                results[row["test"]] = row["status"]
    return results


def count_groups(results: dict[str, str], groups: list[tuple[str, str]]) -> dict:
    counts = {name: collections.Counter() for name, _ in groups}
    failed = []
    for test, status in sorted(results.items()):
        name = next((n for n, rx in groups if re.search(rx, test)), None)
        if name is None:
            continue
        kind = "passed" if status in PASSED else "skipped" if status in SKIPPED else "failed"
        counts[name][kind] += 1
        if kind == "failed":
            failed.append(test)
    return counts, failed


def print_figures(path: str) -> None:
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        rows = []
    if not rows:
        return
    table = {}
    for row in rows:
        table[(row["strategy"], row["scenario"], row["phase"])] = row
    print()
    print("Placement requests per operation (total = conductor+scheduler / compute)")
    header = f"{'strategy':<18} {'scenario':<11} {'resize':>12} {'confirm':>12} {'revert':>12}"
    print(header)
    print("-" * len(header))
    for strategy in ("legacy", "max_flavor"):
        for scenario in ("same_host", "other_host"):
            cells = []
            for phase in ("resize", "confirm", "revert"):
                row = table.get((strategy, scenario, phase))
                cells.append(
                    f"{row['total']} = {row['conductor_scheduler']}/{row['compute']}"
                    if row
                    else "-"
                )
            if any(c != "-" for c in cells):
                print(f"{strategy:<18} {scenario:<11} " + " ".join(f"{c:>12}" for c in cells))
    print_moves(table)


#: The phases of each move, as test_placement_request_counts.py records them.
MOVES = (
    ("cold_migration", ("migrate", "confirm", "revert")),
    ("live_migration", ("to_handover", "completion", "to_failure", "rollback")),
    ("evacuation", ("evacuate", "source_back")),
)


def _cell(row: dict | None) -> str:
    if not row:
        return "-"
    cell = f"{row['total']} = {row['conductor_scheduler']}/{row['compute']}"
    for name in ("api", "other"):
        if row.get(name):
            cell += f" +{row[name]} {name}"
    return cell


def print_moves(table: dict) -> None:
    """The moves' phases, one line per strategy and move."""
    lines = []
    for strategy in ("legacy", "max_flavor"):
        for move, phases in MOVES:
            rows = [table.get((strategy, move, phase)) for phase in phases]
            if not any(rows):
                continue
            cells = [f"{phase} {_cell(row)}" for phase, row in zip(phases, rows)]
            restart = rows[-1].get("restart_total") if rows[-1] else None
            if restart is not None:
                cells.append(f"(the restart's other requests: {restart})")
            lines.append(f"{strategy:<18} {move:<15} " + ", ".join(cells))
    if lines:
        print()
        print("Placement requests per move (total = conductor+scheduler / compute [+ nova-api])")
        print("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--counts", required=True)
    parser.add_argument("csv", nargs="+")
    argv = sys.argv[1:]
    split = argv.index("--")
    args = parser.parse_args(argv[:split])
    groups = [tuple(g.split("=", 1)) for g in argv[split + 1 :]]

    results = read_results(args.csv)
    counts, failed = count_groups(results, groups)
    print()
    print(f"Nova 34.0.0 ({args.mode}): tests per group")
    total = collections.Counter()
    ok = True
    for name, _ in groups:
        c = counts[name]
        total.update(c)
        print(
            f"  {name:<15} {c['passed']:4d} passed {c['failed']:4d} failed {c['skipped']:4d} skipped"
        )
        if c["passed"] + c["failed"] == 0:
            print(f"  ERROR: the {name} group ran no test")
            ok = False
    for test in failed:
        print(f"  FAILED: {test}")
    print_figures(args.counts)
    print()
    print(f"nova: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 0 if ok and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
