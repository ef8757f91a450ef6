"""``resize-sched-simulate --workload drain`` on a tiny cluster, against the real Placement.

The busiest host is disabled and its servers cold-migrated off while another
worker resizes the rest: at a low utilisation every move finds room, so the
host ends empty in Placement and in our database, and every host holds
exactly its servers' flavors; the report's counts add up, move by move.
"""

import json

from resize_sched import resources as rs
from resize_sched.cmd import simulate
from resize_sched.simulate import cluster

ARGS = [
    *("--hosts", "4", "--resizes", "6", "--workers", "3", "--utilisation", "0.5"),
    *("--seeds", "1", "--seed", "1", "--strategies", "legacy", "--quiet"),
    *("--workload", "drain", "--drain-workers", "2"),
]


def test_tiny_drain_empties_the_host_and_counts_add_up(tmp_path, capsys) -> None:
    path = tmp_path / "drain.json"
    assert simulate.main([*ARGS, "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no room" in out and "resched" in out

    document = json.loads(path.read_text())
    (f,) = document["drain_figures"]
    (run,) = document["runs"]
    drain, moves = run["drain"], run["drain"]["moves"]
    (host,) = drain["hosts"]

    # The busiest host of the seeded layout was drained, every server of it moved.
    start = {h: 0 for h in drain["all_usage"]}
    assert moves and all(m["source"] == host for m in moves)
    assert f["drained_hosts"] == [host]
    assert f["moves"] == len(moves) == len({m["server"] for m in moves})
    assert f["moved"] == f["moves"], moves
    assert all(m["dest"] not in (None, host) for m in moves)

    # The counts add up, and agree with the moves they count.
    assert f["moves"] == f["moved"] + f["no_room"] + f["restores_refused"] + f["errors"]
    assert f["no_room"] == sum(m["result"] in ("deferred", "infeasible") for m in moves)
    assert f["rescheduled"] == sum(m["rescheduled"] for m in moves)
    assert f["missed"] == sum(m["fits"] and not m["succeeded"] for m in moves) == 0
    assert f["oracle_fits"] == f["moves"] - f["won"]
    assert f["resizes"]["resizes"] == len(run["outcomes"]) == 6
    assert f["resizes"]["errors"] == 0
    # No resize touched a server of the drained host.
    assert not {o["server"] for o in run["outcomes"]} & {m["server"] for m in moves}

    # The drained host holds nothing, in Placement and in our database; every
    # host holds exactly the flavors of the servers placed on it.
    assert f["servers_left"] == 0 and drain["left"] == {host: 0}
    assert f["usage_left"] == {rs.VCPU: 0, rs.MEMORY_MB: 0, rs.DISK_GB: 0}
    assert drain["usage"] == {host: {}}
    by_name = {spec.name: spec for spec in cluster.FLAVORS}
    expected: dict[str, dict[str, int]] = {h: {} for h in start}
    for placed_host, flavor in drain["placed"].values():
        expected[placed_host] = rs.add(expected[placed_host], by_name[flavor].resources)
    assert drain["all_usage"] == expected
    assert expected[host] == {}
