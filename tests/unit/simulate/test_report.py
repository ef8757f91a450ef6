"""The simulation's report: figures from outcomes, the table, the plots."""

import pytest

from resize_sched.simulate import report
from resize_sched.simulate.run import Outcome, RunResult
from resize_sched.simulate.settings import Settings


def _result(strategy: str, level: float, seed: int = 1) -> RunResult:
    ok = Outcome(1, "w0", "s1", "m1.small", "m1.medium", True, True, True, "ok", False)
    ok.extra_held = {"VCPU": 1, "MEMORY_MB": 2048, "DISK_GB": 20}
    ok.decision = "confirm"
    lost = Outcome(2, "w1", "s2", "m1.large", "r1.large", False, True, False, "deferred")
    lost.contended = True
    full = Outcome(3, "w0", "s3", "m1.large", "c1.large", True, False, False, "ok", True)
    full.decision, full.revert_refused = "revert", True
    won = Outcome(4, "w1", "s4", "m1.small", "m1.xlarge", False, False, False, "ok", False)
    won.decision = "revert"
    healed = {5: 7, 6: None}
    return RunResult(
        strategy,
        Settings(utilisation=level, seed=seed),
        4,
        20,
        level,
        [ok, lost, full, won],
        healed,
    )


def test_figures_count_the_outcomes() -> None:
    f = report.figures(_result("drop_and_reclaim", 0.9))
    assert (f["resizes"], f["succeeded"], f["oracle_feasible"]) == (4, 3, 3)
    assert f["success_of_feasible_pct"] == pytest.approx(66.7)
    assert (f["lost_races"], f["won_races"]) == (1, 1)
    assert (f["same_host_full"], f["same_host_full_succeeded"], f["same_host"]) == (1, 1, 1)
    assert f["verify_extra_mean"] == {"VCPU": 0.33, "MEMORY_MB": 682.67, "DISK_GB": 6.67}
    assert (f["reverts"], f["reverts_refused"]) == (2, 1)
    assert (f["restores_refused"], f["healed"], f["unhealed"]) == (2, 1, 1)
    assert f["failures"] == {"deferred": 1}
    assert f["seed"] == 1
    table = report.table([f])
    assert "drop_and_reclaim" in table and "66.7%" in table


def test_summary_sums_counts_and_spreads_shares_over_seeds() -> None:
    one = report.figures(_result("max_flavor", 0.9, seed=1))
    two = report.figures(_result("max_flavor", 0.9, seed=2))
    # A second seed where every feasible resize succeeded.
    two = {**two, "feasible_succeeded": 3, "success_of_feasible_pct": 100.0}
    other = report.figures(_result("legacy", 0.9, seed=1))
    entries = report.summary([one, other, two])
    assert [(e["strategy"], e["seeds"]) for e in entries] == [
        ("max_flavor", [1, 2]),
        ("legacy", [1]),
    ]
    mine = entries[0]
    assert (mine["resizes"], mine["succeeded"], mine["oracle_feasible"]) == (8, 6, 6)
    assert mine["feasible_succeeded"] == 2 + 3
    assert mine["success_of_feasible_pct"] == {"mean": 83.3, "min": 66.7, "max": 100.0}
    assert mine["restores_refused"] == 4
    table = report.summary_table(entries)
    assert "83.3% (67-100)" in table
    assert len(table.splitlines()) == 2 + 2


def test_plots(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    rows = [
        report.figures(_result(strategy, level, seed))
        for level in (0.7, 0.8, 0.9, 0.95, 0.97)
        for seed in (1, 2)
        for strategy in ("legacy", "max_flavor")
    ]
    paths = report.plot(rows, str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "simulation-success.png",
        "simulation-verify-held.png",
    ]
    for path in paths:
        with open(path, "rb") as png:
            assert png.read(8) == b"\x89PNG\r\n\x1a\n"
