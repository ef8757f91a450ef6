"""The fake hypervisor: state changes per step, idempotency, delay, failure injection."""

import time

import pytest

from resize_sched import exception
from resize_sched.compute.driver.fake import RUNNING, SHUTOFF, FakeDriver

OLD = {"id": "small", "vcpus": 1, "memory_mb": 512, "root_gb": 10}
NEW = {"id": "large", "vcpus": 2, "memory_mb": 1024, "root_gb": 10}
SERVER = {"uuid": "s-1", "name": "vm1", "flavor": OLD}


def _migration(source: str, dest: str) -> dict:
    return {
        "uuid": "m-1",
        "server_uuid": "s-1",
        "source_host": source,
        "dest_host": dest,
        "old_flavor": OLD,
        "new_flavor": NEW,
    }


def test_spawn_and_destroy_are_idempotent() -> None:
    driver = FakeDriver("h1")
    driver.spawn(SERVER)
    driver.spawn(SERVER)
    instance = driver.get_instance("s-1")
    assert instance is not None
    assert (instance.name, instance.flavor, instance.power_state) == ("vm1", OLD, RUNNING)
    assert driver.list_instances() == ["s-1"]
    driver.destroy("s-1")
    driver.destroy("s-1")
    assert driver.list_instances() == []


def test_resize_to_another_host_then_confirm() -> None:
    source, dest = FakeDriver("h1"), FakeDriver("h2")
    migration = _migration("h1", "h2")
    source.spawn(SERVER)
    dest.prep_resize(migration)
    for _ in range(2):  # a re-sent message does no harm
        source.migrate_disk_and_power_off(migration)
        dest.finish_migration(migration)
    src, dst = source.get_instance("s-1"), dest.get_instance("s-1")
    assert src is not None and dst is not None
    assert (src.flavor, src.power_state, src.migration_uuid) == (OLD, SHUTOFF, "m-1")
    assert (dst.flavor, dst.power_state, dst.migration_uuid) == (NEW, RUNNING, "m-1")
    source.confirm_migration(migration)
    source.confirm_migration(migration)
    assert source.list_instances() == []
    assert dest.list_instances() == ["s-1"]


def test_resize_to_another_host_then_revert() -> None:
    source, dest = FakeDriver("h1"), FakeDriver("h2")
    migration = _migration("h1", "h2")
    source.spawn(SERVER)
    source.migrate_disk_and_power_off(migration)
    dest.finish_migration(migration)
    for _ in range(2):
        dest.revert(migration)
        source.finish_revert(migration)
    assert dest.list_instances() == []
    src = source.get_instance("s-1")
    assert src is not None
    assert (src.flavor, src.power_state, src.migration_uuid) == (OLD, RUNNING, None)


def test_same_host_resize_confirm_and_revert() -> None:
    driver = FakeDriver("h1")
    migration = _migration("h1", "h1")
    driver.spawn(SERVER)
    driver.prep_resize(migration)
    driver.migrate_disk_and_power_off(migration)
    driver.finish_migration(migration)
    instance = driver.get_instance("s-1")
    assert instance is not None and (instance.flavor, instance.power_state) == (NEW, RUNNING)

    driver.revert(migration)  # the one copy is not the destination's to destroy
    assert driver.list_instances() == ["s-1"]
    driver.finish_revert(migration)
    instance = driver.get_instance("s-1")
    assert instance is not None and (instance.flavor, instance.migration_uuid) == (OLD, None)

    driver.migrate_disk_and_power_off(migration)
    driver.finish_migration(migration)
    driver.confirm_migration(migration)
    instance = driver.get_instance("s-1")
    assert instance is not None
    assert (instance.flavor, instance.power_state, instance.migration_uuid) == (NEW, RUNNING, None)


def test_unknown_server_is_adopted_from_the_message() -> None:
    """A restarted fake host has forgotten its servers; the message is the truth."""
    driver = FakeDriver("h1")
    driver.migrate_disk_and_power_off(_migration("h1", "h2"))
    instance = driver.get_instance("s-1")
    assert instance is not None and (instance.flavor, instance.power_state) == (OLD, SHUTOFF)


def test_get_instance_returns_a_copy() -> None:
    driver = FakeDriver("h1")
    driver.spawn(SERVER)
    instance = driver.get_instance("s-1")
    assert instance is not None
    instance.flavor["vcpus"] = 99
    assert driver.get_instance("s-1").flavor["vcpus"] == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("operation", "call"),
    [
        ("spawn", lambda d, m: d.spawn(SERVER)),
        ("prep_resize", lambda d, m: d.prep_resize(m)),
        ("resize", lambda d, m: d.migrate_disk_and_power_off(m)),
        ("finish_resize", lambda d, m: d.finish_migration(m)),
        ("confirm", lambda d, m: d.confirm_migration(m)),
        ("revert", lambda d, m: d.revert(m)),
        ("revert", lambda d, m: d.finish_revert(m)),
    ],
)
def test_injected_failure_hits_exactly_that_operation(operation, call) -> None:
    migration = _migration("h1", "h2")
    failing = FakeDriver("h1", fail_on=[operation])
    with pytest.raises(exception.InjectedFailure) as info:
        call(failing, migration)
    assert info.value.code == "resize_sched.compute.injected_failure"
    assert operation in str(info.value) and "h1" in str(info.value)
    assert failing.list_instances() == []  # a failed step changes nothing
    call(FakeDriver("h1"), migration)  # the same step on a healthy host works


def test_other_operations_still_work_on_a_failing_host() -> None:
    driver = FakeDriver("h1", fail_on=["prep_resize"])
    driver.spawn(SERVER)
    driver.migrate_disk_and_power_off(_migration("h1", "h2"))
    with pytest.raises(exception.InjectedFailure):
        driver.prep_resize(_migration("h2", "h1"))


def test_unknown_operation_is_a_configuration_error() -> None:
    with pytest.raises(exception.ConfigurationError, match="bogus"):
        FakeDriver("h1", fail_on=["bogus"])


def test_delay() -> None:
    driver = FakeDriver("h1", delay_s=0.05)
    started = time.monotonic()
    driver.spawn(SERVER)
    assert time.monotonic() - started >= 0.05
