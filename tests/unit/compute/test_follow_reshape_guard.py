"""Guards for the conductor following a reshape: a resize in flight from or
to the reshaped host is re-recorded, its old allocation translated by what
both its consumers hold now, and an amount goes to the cell with most room.

The database and Placement are small in-memory stand-ins, so
``conductor.reshape.follow`` runs whole, as the report handler calls it.
"""

from types import SimpleNamespace
from typing import Any

from resize_sched.conductor import reshape
from resize_sched.placement.client import ConsumerAllocations

ROOT, CELL0, CELL1, OTHER = "root", "cell0", "cell1", "other-host"
BEFORE = {ROOT: frozenset({"VCPU", "MEMORY_MB", "DISK_GB"})}
AFTER = {
    ROOT: frozenset({"DISK_GB"}),
    CELL0: frozenset({"VCPU", "MEMORY_MB"}),
    CELL1: frozenset({"VCPU", "MEMORY_MB"}),
}
OLD = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
NEW = {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 10}


class _Db:
    def __init__(self, migrations: list[Any]) -> None:
        self.migrations = migrations
        self.migration_updates: dict[str, dict[str, Any]] = {}
        self.server_updates: dict[str, dict[str, Any]] = {}

    def migration_list(self, statuses: Any) -> list[Any]:
        return list(self.migrations)

    def server_list(self, host: str) -> list[Any]:
        return []

    def migration_update(self, uuid: str, **values: Any) -> None:
        self.migration_updates[uuid] = values

    def server_update(self, uuid: str, **values: Any) -> None:
        self.server_updates[uuid] = values


class _Placement:
    def __init__(self, held: dict[str, dict[str, dict[str, int]]]) -> None:
        self.held = held

    def get_allocations(self, consumer: str) -> ConsumerAllocations:
        allocations = self.held.get(consumer, {})
        return ConsumerAllocations(allocations, 3 if allocations else None)


def _migration(source: str, dest: str) -> Any:
    return SimpleNamespace(
        uuid="mig",
        server_uuid="srv",
        source_rp_uuid=source,
        dest_rp_uuid=dest,
        old_allocations={ROOT: dict(OLD)},
        old_resources=dict(OLD),
        old_flavor={"vcpus": 2, "memory_mb": 2048, "root_gb": 10},
        new_flavor={"vcpus": 4, "memory_mb": 4096, "root_gb": 10},
    )


def test_a_resize_from_the_reshaped_host_translates_its_old_allocation() -> None:
    # Before a host is chosen (legacy): the migration consumer holds the old
    # flavor on the source, now on cell1 (the reshape moved it there); the
    # server consumer holds nothing yet.
    placement = _Placement({"mig": {ROOT: {"DISK_GB": 10}, CELL1: {"VCPU": 2, "MEMORY_MB": 2048}}})
    db = _Db([_migration(ROOT, None)])
    assert reshape.follow(db, placement, "h1", ROOT, BEFORE, AFTER) == 1
    values = db.migration_updates["mig"]
    assert values["old_allocations"] == {
        ROOT: {"DISK_GB": 10},
        CELL1: {"VCPU": 2, "MEMORY_MB": 2048},
    }
    assert values["holdings"]["migration"] == placement.held["mig"]


def test_a_resize_away_keeps_its_old_allocation_off_the_destination() -> None:
    placement = _Placement(
        {
            "srv": {OTHER: dict(NEW)},
            "mig": {ROOT: {"DISK_GB": 10}, CELL1: {"VCPU": 2, "MEMORY_MB": 2048}},
        }
    )
    # The server's claim is on another host: only the migration's holdings
    # say where the reshape put the old allocation.
    db = _Db([_migration(ROOT, OTHER)])
    reshape.follow(db, placement, "h1", ROOT, BEFORE, AFTER)
    assert db.migration_updates["mig"]["old_allocations"] == {
        ROOT: {"DISK_GB": 10},
        CELL1: {"VCPU": 2, "MEMORY_MB": 2048},
    }


def test_a_resize_onto_the_reshaped_host_has_its_holdings_read_again() -> None:
    # The source is another host; the reshaped host is the destination:
    # its holdings are re-read, its old allocation (on the source) is not
    # the reshaped host's to translate.
    placement = _Placement(
        {
            "srv": {ROOT: {"DISK_GB": 10}, CELL0: {"VCPU": 4, "MEMORY_MB": 4096}},
            "mig": {OTHER: dict(OLD)},
        }
    )
    migration = _migration(OTHER, ROOT)
    migration.old_allocations = {OTHER: dict(OLD)}
    db = _Db([migration])
    assert reshape.follow(db, placement, "h1", ROOT, BEFORE, AFTER) == 1
    values = db.migration_updates["mig"]
    assert values["holdings"]["server"] == placement.held["srv"]
    assert "old_allocations" not in values


def test_an_amount_no_consumer_holds_yet_goes_to_the_cell_with_most_room() -> None:
    # The consumers hold 1 VCPU on cell0 and 3 on cell1 now: a stored
    # VCPU amount of 2 follows the larger holding first.
    stored = {ROOT: {"VCPU": 2, "DISK_GB": 10}}
    hints = {CELL0: {"VCPU": 1}, CELL1: {"VCPU": 3}}
    assert reshape.translate(stored, BEFORE, AFTER, hints) == {
        ROOT: {"DISK_GB": 10},
        CELL1: {"VCPU": 2},
    }
