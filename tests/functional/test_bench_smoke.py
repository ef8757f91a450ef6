"""The benchmark runs end to end at a tiny size and reports sane figures.

Only counts and outcomes are asserted, never timings: every strategy is in
the JSON with the bare floor beside it, every resize, confirm and revert
made Placement requests, every schedule opened transactions of our own
database, the resize that fits nowhere got its verdict, every phase of a
cold migration, a live migration (completed and rolled back) and an
evacuation was counted, the cloud had a compute node per host, and
Placement's usage matched the servers at the end.
"""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

# NOTE: about 10 s of CPU (three strategies, each with its own floor,
# cycles, failure and consistency check): slow by the project's rule.
pytestmark = pytest.mark.slow

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


#: The benchmark's modules, imported by their bare names as the script does.
MODULES = (
    "resize_bench",
    "bench",
    "cloud",
    "consistency",
    "figures",
    "floor",
    "fullstack",
    "moves",
    "options",
    "report",
    "schedule_timeline",
    "worker",
)


@pytest.fixture
def resize_bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in MODULES:
        sys.modules.pop(name, None)
    import resize_bench

    yield resize_bench
    for name in MODULES:
        sys.modules.pop(name, None)


def test_tiny_run_reports_every_strategy_beside_the_floor(
    resize_bench: ModuleType, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    argv = ["--hosts", "5", "--resizes", "3", "--failures", "1", "--moves", "1"]
    argv += ["--same-host", "off", "--concurrency", "", "--no-full-stack", "--json", str(out)]
    assert resize_bench.main(argv) == 0

    doc = json.loads(out.read_text())
    assert doc["setup"]["5"]["compute_nodes"] == 5
    assert doc["setup"]["5"]["servers"] > 0
    runs = doc["sizes"]["5"]
    assert sorted(run["strategy"] for run in runs) == sorted(resize_bench.STRATEGIES)
    for run in runs:
        name = run["strategy"]
        # One floor sample before each cycle (none found no candidate).
        assert run["floor"]["total_ms"]["n"] == 3, name
        assert run["floor"]["candidates"] > 0, name
        assert run["cycles"] == 3 and run["completed"] == 3, (name, run["errors"])
        assert run["errors"] == {} and run["failed_cycles"] == 0, (name, run["error_examples"])
        requests = run["requests"]
        assert requests["schedule_to_claim_mean"] > 0, name
        assert requests["confirm_mean"] > 0 and requests["revert_mean"] > 0, name
        # Every schedule+claim opens transactions of our own database.
        assert run["db_transactions"]["schedule_to_claim_mean"] > 0, name
        assert run["db_ms"]["n"] == run["own_outside_db_ms"]["n"] == 3, name
        assert run["failure"]["kinds"] == {"infeasible": 1}, name
        assert run["failure"]["requests"]["n"] == 1, name
        assert run["consistency"]["violations"] == 0, (name, run["consistency"])
        assert run["consistency"]["carried_over"] == 0, name
        assert run["consistency"]["hosts_checked"] == 5, name
    # One move of each kind per strategy, every phase counted, none failed.
    assert [m["strategy"] for m in doc["moves"]] == list(resize_bench.STRATEGIES)
    for run in doc["moves"]:
        name = run["strategy"]
        assert run["moves"] == 4 and run["errors"] == {}, (name, run["error_examples"])
        assert run["consistency"]["violations"] == 0, name
        counted = {phase: r["n"] for phase, r in run["requests"].items()}
        assert counted == {
            f"{move}: {phase}": 1
            for move, phase in sys.modules["moves"].PHASES
            if phase != "revert"
        }, name
        assert all(r["mean"] > 0 for r in run["requests"].values()), name
    printed = capsys.readouterr().out
    assert "schedule+claim p50 / floor p50" in printed
    assert "in our database p50 (ms)" in printed
    assert "Full stack" not in printed
    assert "Placement requests per move" in printed


def test_the_timeline_splits_our_own_time_into_its_parts(
    resize_bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    import schedule_timeline

    argv = ["--hosts", "4", "--resizes", "3", "--failures", "0"]
    argv += ["--strategies", "max_flavor,legacy", "--same-host", "off"]
    results = schedule_timeline.run(argv)
    assert sorted(results) == ["4 legacy", "4 max_flavor"]
    for label, means in results.items():
        assert means["schedules"] == 3, label
        parts = [means[p] for p in schedule_timeline.PARTS]
        assert all(p >= 0 for p in parts), means
        # Every schedule opens, runs, commits and ends transactions of its own.
        for part in ("opening a transaction", "statements", "commits", "ending a transaction"):
            assert means[part] > 0, (label, part)
        assert abs(sum(parts) - means["own"]) < 1e-6
    out = capsys.readouterr().out
    assert "4 max_flavor" in out and "between statements" in out
