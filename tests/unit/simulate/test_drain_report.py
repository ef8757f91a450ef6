"""The drain workload's pieces that need no Placement: the hosts it drains,
its figures and table from hand-made moves."""

from resize_sched import resources as rs
from resize_sched.simulate import cluster, report
from resize_sched.simulate.drain import DrainResult, MoveOutcome, busiest
from resize_sched.simulate.run import RunResult
from resize_sched.simulate.settings import Settings


def test_busiest_is_the_most_used_class_then_the_name() -> None:
    used = {
        "b": {rs.VCPU: 8, rs.MEMORY_MB: 8192},  # 50% VCPU
        "a": {rs.VCPU: 2, rs.MEMORY_MB: 32768},  # 50% memory: ties with b, first by name
        "c": {rs.VCPU: 12},  # 75% VCPU
        "d": {},
    }
    assert busiest(used, cluster.HOST, 1) == ["c"]
    assert busiest(used, cluster.HOST, 3) == ["c", "a", "b"]


def test_drain_figures_count_each_move_once() -> None:
    moves = [
        MoveOutcome(1, "w0", "s1", "m1.small", "h0", True, "ok", "h1"),
        MoveOutcome(2, "w1", "s2", "m1.large", "h0", True, "ok", "h2", rescheduled=True),
        MoveOutcome(3, "w0", "s3", "m1.large", "h0", True, "deferred"),  # a miss
        MoveOutcome(4, "w1", "s4", "m1.xlarge", "h0", False, "infeasible"),
        MoveOutcome(5, "w0", "s5", "m1.small", "h0", False, "ok", "h1"),  # won
    ]
    left = {rs.VCPU: 12, rs.MEMORY_MB: 24576, rs.DISK_GB: 240}
    drain = DrainResult(["h0"], moves, {"h0": left}, {"h0": 2})
    result = RunResult("legacy", Settings(workload="drain"), 3, 9, 0.9, [], {}, 0, drain)
    f = report.drain_figures(result)
    assert {k: f[k] for k in ("moves", "moved", "no_room", "rescheduled", "restores_refused")} == {
        "moves": 5,
        "moved": 3,
        "no_room": 2,
        "rescheduled": 1,
        "restores_refused": 0,
    }
    assert (f["oracle_fits"], f["missed"], f["won"], f["errors"]) == (3, 1, 1, 0)
    assert f["servers_left"] == 2 and f["usage_left"] == left
    assert f["resizes"]["resizes"] == 0
    table = report.drain_table([f])
    assert table.splitlines()[0] == report.DRAIN_HEADER
    assert "12/24/240" in table.splitlines()[2]
    assert result.to_json()["drain"]["moves"][2]["no_room"] is True
