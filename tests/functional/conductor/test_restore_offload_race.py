"""A restore of what a failed resize left missing and the sweep's offload of
the same shelved server, interleaved at the two points where they can meet,
against the real Placement and database: the offloaded server never ends up
holding its old flavor.

Seen in the HA run (``doc/ha.rst``): one conductor's sweep retried the
restore while the other's offloaded the server. The offload found nothing to
give back (the restore had not written yet) and the restore's write then put
the old flavor back on the host of a server that had none. Each is now
checked with the other's state on the server's row: the restore's journal
entry only while the server rests on its host, the offload's beginning only
while no restore entry is ``intended``.
"""

from typing import Any

import pytest

from resize_sched.conductor import heal
from resize_sched.conductor.tasks.shelve import ShelveTask
from resize_sched.db import models
from tests.functional.conductor.test_self_heal import OLD, _refused_restore


def _shelved(make_cloud: Any) -> tuple[Any, Any, Any]:
    """A server whose restore was refused, room free again, SHELVED and idle."""
    cloud, server, migration, squatter = _refused_restore(make_cloud)
    cloud.leave(squatter)
    server = cloud.db.server_update(
        server.uuid,
        status=models.STATUS_SHELVED,
        vm_state=models.VM_SHELVED,
        task_state=None,
        power_state=models.POWER_SHUTDOWN,
    )
    return cloud, server, cloud.db.migration_get(migration.uuid)


def _offload(cloud: Any, seen: Any) -> bool:
    """The sweep's offload of the server as it read it: begun, and the host's
    report that it removed it. Whether it began."""
    shelves = ShelveTask(cloud.deps)
    if not shelves.begin_sweep_offload(seen):
        return False
    assert shelves.offloaded(seen.uuid, "host1") is not None
    return True


class _PausedExecutor:
    """The executor, with ``pause`` run once when the restore's apply begins
    (after the restore read the server, before its journal entry)."""

    def __init__(self, executor: Any, pause: Any) -> None:
        self.executor, self.pause = executor, pause

    def apply(self, *args: Any, **kwargs: Any) -> Any:
        pause, self.pause = self.pause, None
        if pause is not None:
            pause()
        return self.executor.apply(*args, **kwargs)


def _pause_before_write(cloud: Any, monkeypatch: pytest.MonkeyPatch, pause: Any) -> None:
    """``pause`` runs once, when the restore's Placement write is about to
    go (its journal entry written)."""
    for name in ("put_allocations", "post_allocations"):
        real = getattr(cloud.client, name)

        def write(*args: Any, _real: Any = real, **kwargs: Any) -> Any:
            nonlocal pause
            run, pause = pause, None
            if run is not None:
                run()
            return _real(*args, **kwargs)

        monkeypatch.setattr(cloud.client, name, write)


def _exact_after_offload(cloud: Any, server_uuid: str) -> None:
    server = cloud.db.server_get(server_uuid)
    assert server.status == models.STATUS_SHELVED_OFFLOADED
    assert server.rp_uuid is None and not server.needs_heal
    assert cloud.holds(server_uuid) == {}
    assert cloud.usage("host1") == {}
    cloud.check()


def test_an_offload_waits_for_a_restore_between_its_journal_and_its_write(
    make_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud, server, migration = _shelved(make_cloud)
    began: list[bool] = []
    _pause_before_write(cloud, monkeypatch, lambda: began.append(_offload(cloud, server)))

    heal.restore_missing(cloud.db, cloud.deps.executor, migration, "restore")
    restored = cloud.holds(server.uuid)
    # The next sweep offloads it if it is not yet, and gives back what the
    # restore put back.
    if cloud.db.server_get(server.uuid).status == models.STATUS_SHELVED:
        assert _offload(cloud, cloud.db.server_get(server.uuid))

    _exact_after_offload(cloud, server.uuid)
    # The restore's entry was intended: the offload did not begin then; the
    # restore put the old flavor back on the shelved server's host.
    assert began == [False]
    assert restored == cloud.on("host1", OLD)
    assert cloud.db.migration_get(migration.uuid).missing is None


def test_a_restore_read_before_an_offload_is_dropped_once_it_is_offloaded(
    make_cloud: Any,
) -> None:
    cloud, server, migration = _shelved(make_cloud)
    began: list[bool] = []
    paused = _PausedExecutor(cloud.deps.executor, lambda: began.append(_offload(cloud, server)))

    heal.restore_missing(cloud.db, paused, migration, "restore")

    _exact_after_offload(cloud, server.uuid)
    # The offload went first; the restore found the server offloaded where
    # it journals, wrote nothing and dropped the record of what was missing.
    assert began == [True]
    assert cloud.db.migration_get(migration.uuid).missing is None
    assert [e.phase for e in cloud.db.journal_list(migration.uuid)].count("restore") == 1


def test_a_shelve_that_would_offload_during_a_restore_keeps_its_room(
    make_cloud: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NOTE: [DEFAULT] shelved_offload_time = 0 (the default): the shelve
    # report begins the offload in its own compare-and-swap.
    cloud, server, migration = _shelved(make_cloud)
    cloud.db.server_update(server.uuid, status=models.STATUS_ACTIVE, vm_state=models.VM_ACTIVE)
    shelves = ShelveTask(cloud.deps)
    reported: list[Any] = []

    def shelve() -> None:
        cloud.db.server_update(server.uuid, task_state=models.TASK_SHELVING)
        reported.append(shelves.shelved(server.uuid, "host1"))

    _pause_before_write(cloud, monkeypatch, shelve)
    heal.restore_missing(cloud.db, cloud.deps.executor, migration, "restore")

    # SHELVED, holding what the restore put back; not offloading.
    (shelved,) = reported
    assert (shelved.status, shelved.task_state) == (models.STATUS_SHELVED, None)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    cloud.check()
    # An offload asked for now gives it all back.
    assert _offload(cloud, cloud.db.server_get(server.uuid))
    _exact_after_offload(cloud, server.uuid)
