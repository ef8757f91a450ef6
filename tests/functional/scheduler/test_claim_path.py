"""The claim path's own work: database commits per transition.

A transition that lands commits twice: its journal entry with the holdings it
leads to, then the entry ``applied``. A refused one puts the holdings back, so
the migration row never says anything Placement does not hold.
"""

from typing import Any

import pytest

from resize_sched import exception
from resize_sched.placement.client import ConsumerWrite
from resize_sched.strategies import Holdings
from tests.functional.fixtures.cloud import Cloud

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}


def _begun(make_cloud: Any) -> tuple[Cloud, Any]:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=4, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=4, memory_mb=8192, disk_gb=100)
    f_old = cloud.flavor("old", *OLD.values())
    f_new = cloud.flavor("new", *NEW.values())
    server = cloud.boot("vm", f_old, host="host1")
    return cloud, cloud.resizes.begin(server.uuid, f_new.flavorid)


def _claim_on_host2(cloud: Cloud, migration: Any) -> Holdings:
    return Holdings(
        server=cloud.on("host2", NEW),
        migration=cloud.on("host1", OLD),
    )


def test_a_transition_that_lands_commits_twice(make_cloud: Any) -> None:
    cloud, migration = _begun(make_cloud)
    executor = cloud.deps.executor
    with cloud.commits() as count:
        updated = executor.apply(migration, "claim", _claim_on_host2(cloud, migration))
    assert count == [2]
    # The row says what Placement holds, generations included.
    assert updated.holdings == executor.read(migration).to_dict()
    assert cloud.db.migration_get(migration.uuid).holdings == updated.holdings
    assert [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        ("claim", "applied")
    ]
    # The next transition starts from the row, with no read.
    cloud.client.reset_request_count()
    executor.apply(updated, "revert", Holdings(server=cloud.on("host1", OLD)))
    assert cloud.client.request_count == 1
    assert cloud.holds(migration.server_uuid) == cloud.on("host1", OLD)


def test_a_refused_transition_puts_the_holdings_back(make_cloud: Any) -> None:
    cloud, migration = _begun(make_cloud)
    before = cloud.db.migration_get(migration.uuid).holdings
    cloud.squat("host2", VCPU=4)
    executor = cloud.deps.executor
    with pytest.raises(exception.ClaimRefused):
        executor.apply(migration, "claim", _claim_on_host2(cloud, migration))
    assert cloud.db.migration_get(migration.uuid).holdings == before
    assert executor.read(migration).to_dict() == before
    assert [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)] == [
        ("claim", "abandoned")
    ]
    cloud.check()


def test_a_generation_conflict_then_nothing_to_do_records_what_is_held(
    make_cloud: Any,
) -> None:
    """The retry finds the target already held (someone wrote it): the row,
    which the first attempt left expecting its own write, says what is held."""
    cloud, migration = _begun(make_cloud)
    target = _claim_on_host2(cloud, migration)
    # Someone else moves the server exactly to the target behind our back.
    real_post = cloud.client.post_allocations

    def someone_first(writes: Any) -> None:
        cloud.client.post_allocations = real_post  # type: ignore[method-assign]
        held = cloud.observer.get_allocations(migration.server_uuid)
        mig = cloud.observer.get_allocations(migration.uuid)
        cloud.observer.post_allocations(
            {
                migration.server_uuid: ConsumerWrite(
                    target.server, migration.project_id, migration.user_id, held.generation
                ),
                migration.uuid: ConsumerWrite(
                    target.migration,
                    migration.project_id,
                    migration.user_id,
                    mig.generation,
                    consumer_type="MIGRATION",
                ),
            }
        )
        real_post(writes)  # stale generations: 409

    cloud.client.post_allocations = someone_first  # type: ignore[method-assign]
    updated = cloud.deps.executor.apply(migration, "claim", target)
    actual = cloud.deps.executor.read(migration).to_dict()
    assert updated.holdings == actual
    assert cloud.db.migration_get(migration.uuid).holdings == actual
