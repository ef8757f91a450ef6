"""Placement requests per cold migration, live migration and evacuation.

The benchmark's move table (``benchmarks/moves.py``, printed by
``resize_bench.py`` and given in doc/benchmark.rst) comes from
:class:`moves.MoveRunner`; here the same runner moves one server between two
hosts and every phase's count is asserted exactly under each strategy, so
the table cannot drift unnoticed, and against Nova 34.0.0's count for the
same phase (``moves.NOVA``): none may be more. After every step the exact
holdings of the server and its migration are asserted, and after each move
the invariants are checked.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[3] / "benchmarks"

FLAVOR = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}

#: Our requests per phase (the order of ``moves.PHASES``), by strategy: only
#: a cold migration's schedule follows the configured strategy (under
#: ``max_flavor`` its claim hands the source to the migration in the same
#: write); live migrations and evacuations are always ``legacy``'s targets.
COMMON = {
    ("live migration", "to the hand-over"): 3,
    ("live migration", "completion"): 1,
    ("live migration", "whole"): 4,
    ("live migration", "rollback"): 1,
    ("evacuation", "to the rebuild"): 3,
    ("evacuation", "source back"): 3,
    ("evacuation", "whole"): 6,
    ("cold migration", "confirm"): 1,
    ("cold migration", "revert"): 1,
}
OURS = {
    "legacy": {("cold migration", "to VERIFY_RESIZE"): 3, **COMMON},
    "drop_and_reclaim": {("cold migration", "to VERIFY_RESIZE"): 3, **COMMON},
    "max_flavor": {("cold migration", "to VERIFY_RESIZE"): 2, **COMMON},
}

#: After these steps the server holds the destination and its migration the
#: source; after the ending steps one of them holds everything.
IN_FLIGHT = {"schedule", "finish", "prepared", "rebuilt"}
ON_DESTINATION = {"confirm", "complete", "source back"}
ON_SOURCE = {"revert", "rollback"}


@pytest.fixture
def moves() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    sys.modules.pop("moves", None)
    try:
        import moves

        yield moves
    finally:
        sys.modules.pop("moves", None)
        sys.path.remove(str(BENCHMARKS))


@pytest.mark.parametrize(
    "strategy",
    ["legacy", pytest.param("drop_and_reclaim", marks=pytest.mark.slow), "max_flavor"],
)
def test_placement_requests_per_move_beside_nova(make_cloud, moves, strategy):
    cloud = make_cloud(strategy)
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=4, memory_mb=4096, disk_gb=100)
    flavor = cloud.flavor("small", FLAVOR["VCPU"], FLAVOR["MEMORY_MB"], FLAVOR["DISK_GB"])
    server = cloud.boot("vm", flavor, host="host1")
    host_of = {rp: name for name, rp in cloud.hosts.items()}
    steps = []

    def after(step, migration_uuid):
        migration = cloud.db.migration_get(migration_uuid)
        source, dest = host_of[migration.source_rp_uuid], host_of[migration.dest_rp_uuid]
        assert source != dest
        if step in IN_FLIGHT:
            assert cloud.holds(server.uuid) == cloud.on(dest, FLAVOR), step
            assert cloud.holds(migration_uuid) == cloud.on(source, FLAVOR), step
        else:
            kept = dest if step in ON_DESTINATION else source
            assert step in ON_DESTINATION | ON_SOURCE, step
            assert cloud.holds(server.uuid) == cloud.on(kept, FLAVOR), step
            assert cloud.holds(migration_uuid) == {}, step
            assert cloud.db.server_get(server.uuid).host == kept, step
            cloud.check()
        steps.append((step, source, dest))

    runner = moves.MoveRunner(cloud.deps, after)
    runner.cold_migration(server.uuid, confirm=True)
    runner.cold_migration(server.uuid, confirm=False)
    runner.live_migration(server.uuid, complete=True)
    runner.live_migration(server.uuid, complete=False)
    runner.evacuation(server.uuid)

    assert steps == [
        ("schedule", "host1", "host2"),
        ("finish", "host1", "host2"),
        ("confirm", "host1", "host2"),
        ("schedule", "host2", "host1"),
        ("finish", "host2", "host1"),
        ("revert", "host2", "host1"),
        ("schedule", "host2", "host1"),
        ("prepared", "host2", "host1"),
        ("complete", "host2", "host1"),
        ("schedule", "host1", "host2"),
        ("prepared", "host1", "host2"),
        ("rollback", "host1", "host2"),
        ("schedule", "host1", "host2"),
        ("rebuilt", "host1", "host2"),
        ("source back", "host1", "host2"),
    ]
    expected = OURS[strategy]
    assert set(expected) == set(moves.PHASES)
    cold = ("cold migration", "to VERIFY_RESIZE")
    assert dict(runner.counts) == {
        key: [count] * (2 if key == cold else 1) for key, count in expected.items()
    }
    # None of ours makes more requests than Nova's for the same phase.
    more = {key: (n, moves.NOVA[key]) for key, n in expected.items() if n > moves.NOVA[key]}
    assert more == {}
