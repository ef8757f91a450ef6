"""The simulation's oracle: its arithmetic, and its reading of Placement's tables."""

import sqlite3

import pytest

from resize_sched.simulate import oracle

HOST = {"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 640}
OLD = {"VCPU": 2, "MEMORY_MB": 16384, "DISK_GB": 80}  # r1.large
NEW = {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 80}  # m1.large


def test_the_source_counts_the_room_the_server_leaves() -> None:
    # Full in VCPU: only the server's own 2 VCPU make room for 4.
    used = {"VCPU": 14, "MEMORY_MB": 60000, "DISK_GB": 600}
    assert not oracle.host_fits(HOST, used, NEW)
    assert oracle.source_fits(HOST, used, OLD, NEW)
    # One VCPU short even then.
    used["VCPU"] = 15
    assert not oracle.source_fits(HOST, used, OLD, NEW)


def test_a_class_the_resize_shrinks_never_blocks_the_source() -> None:
    # Memory is over-full for anyone else, but the resize gives memory back.
    used = {"VCPU": 2, "MEMORY_MB": 65536, "DISK_GB": 80}
    assert oracle.source_fits(HOST, used, OLD, NEW)
    assert not oracle.host_fits(HOST, used, NEW)


def test_exactly_full_fits() -> None:
    used = {"VCPU": 12, "MEMORY_MB": 65536 - 8192, "DISK_GB": 560}
    assert oracle.host_fits(HOST, used, NEW)
    used["DISK_GB"] += 1
    assert not oracle.host_fits(HOST, used, NEW)


@pytest.mark.parametrize(
    ("source_used", "other_used", "feasible", "full"),
    [
        # The bug's case: only the room the server leaves on its own host.
        ({"VCPU": 14, "MEMORY_MB": 16384, "DISK_GB": 80}, HOST, True, True),
        # The source has the new flavor free even on top: not the bug's case.
        ({"VCPU": 2, "MEMORY_MB": 16384, "DISK_GB": 80}, HOST, True, False),
        # Another host takes it: feasible, not the bug's case.
        (HOST, {"VCPU": 0}, True, False),
        # Nowhere, even without the old allocation.
        ({"VCPU": 16, "MEMORY_MB": 65536, "DISK_GB": 80}, HOST, False, False),
    ],
)
def test_judge(source_used, other_used, feasible, full) -> None:
    capacities = {"src": HOST, "other": HOST}
    verdict = oracle.judge(capacities, {"src": source_used, "other": other_used}, "src", OLD, NEW)
    assert verdict.feasible is feasible
    assert verdict.same_host_full is full


def test_a_host_missing_from_the_usages_is_empty() -> None:
    verdict = oracle.judge({"src": HOST, "idle": HOST}, {"src": HOST}, "src", OLD, NEW)
    assert verdict.other_fits
    assert not verdict.source_fits


def _placement_tables(path) -> None:
    """The three tables of Placement's schema the oracle reads, with a few rows."""
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE resource_providers (id INTEGER PRIMARY KEY, uuid TEXT);
            CREATE TABLE resource_classes (id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE allocations (id INTEGER PRIMARY KEY, resource_provider_id INTEGER,
                consumer_id TEXT, resource_class_id INTEGER, used INTEGER);
            CREATE TABLE inventories (id INTEGER PRIMARY KEY, resource_provider_id INTEGER,
                resource_class_id INTEGER, total INTEGER, reserved INTEGER,
                allocation_ratio REAL);
            INSERT INTO resource_providers VALUES (1, 'rp-a'), (2, 'rp-b');
            INSERT INTO resource_classes VALUES (0, 'VCPU'), (1, 'MEMORY_MB');
            INSERT INTO allocations VALUES (1, 1, 'vm1', 0, 2), (2, 1, 'vm2', 0, 3),
                (3, 1, 'vm2', 1, 512), (4, 2, 'mig', 1, 1024);
            INSERT INTO inventories VALUES (1, 1, 0, 16, 2, 1.5), (2, 2, 1, 4096, 0, 1.0);
            """
        )


def test_usages_and_capacities_from_placements_tables(tmp_path) -> None:
    path = str(tmp_path / "placement.db")
    _placement_tables(path)
    assert oracle.usages(path) == {
        "rp-a": {"VCPU": 5, "MEMORY_MB": 512},
        "rp-b": {"MEMORY_MB": 1024},
    }
    assert oracle.capacities(path) == {"rp-a": {"VCPU": 21}, "rp-b": {"MEMORY_MB": 4096}}
