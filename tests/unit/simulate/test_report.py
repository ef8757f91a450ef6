"""The simulation's report: figures from outcomes, the table, the plots."""

import pytest

from resize_sched.simulate import report
from resize_sched.simulate.run import Outcome, RunResult
from resize_sched.simulate.settings import Settings


def _result(strategy: str, level: float) -> RunResult:
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
        strategy, Settings(utilisation=level), 4, 20, level, [ok, lost, full, won], healed
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
    table = report.table([f])
    assert "drop_and_reclaim" in table and "66.7%" in table


def test_plots(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    rows = [
        report.figures(_result(strategy, level))
        for level in (0.8, 0.9)
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
