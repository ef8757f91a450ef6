"""Quota on a resize over the real Placement: a refused resize holds nothing
new, and confirm and revert count usage as Nova does (the flavor a server has
in the database: the new one from VERIFY_RESIZE on, the old one after a revert)."""

from collections.abc import Callable

import pytest

from resize_sched import actions, exception, quota
from tests.functional.fixtures.cloud import PROJECT, Cloud


@pytest.fixture
def cloud(make_cloud: Callable[..., Cloud]) -> Cloud:
    cloud = make_cloud("max_flavor")
    cloud.add_host("h1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("h2", vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud


def _used(cloud: Cloud) -> tuple[int, int]:
    used = quota.usage(cloud.db, PROJECT)
    return used["cores"], used["ram"]


def test_a_resize_over_quota_records_and_claims_nothing(cloud: Cloud) -> None:
    small = cloud.flavor("small", 1, 1024, 10)
    big = cloud.flavor("big", 4, 2048, 10)
    server = cloud.boot("vm", small, host="h1")
    resources = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
    assert cloud.holds(server.uuid) == cloud.on("h1", resources)
    cloud.db.quota_set_limits(PROJECT, {"cores": 3})
    strategy = cloud.deps.configured_strategy()
    with pytest.raises(exception.OverQuota) as refused:
        actions.begin_resize(cloud.db, strategy, server.uuid, big.flavorid, quota_conf=cloud.conf)
    assert refused.value.kwargs == {"resource": "cores", "requested": 3, "used": 1, "limit": 3}
    assert cloud.db.migration_list(server_uuid=server.uuid) == []
    stored = cloud.db.server_get(server.uuid)
    assert (stored.status, stored.task_state, stored.flavor["id"]) == (
        "ACTIVE",
        None,
        small.flavorid,
    )
    assert cloud.holds(server.uuid) == cloud.on("h1", resources)
    assert cloud.usage("h1") == resources
    assert cloud.usage("h2") == {}
    cloud.check()


def test_confirm_and_revert_count_as_nova(cloud: Cloud) -> None:
    small = cloud.flavor("small", 1, 1024, 10)
    big = cloud.flavor("big", 2, 2048, 10)
    server = cloud.boot("vm", small, host="h1")
    assert _used(cloud) == (1, 1024)

    cloud.resize(server, big)
    # Until the new flavor is in place the server counts at its old one...
    assert _used(cloud) == (1, 1024)
    cloud.resizes.finish(cloud.db.migration_list(server_uuid=server.uuid)[0].uuid)
    # ... and from VERIFY_RESIZE on at its new one, as Nova counts instances.
    assert _used(cloud) == (2, 2048)
    cloud.revert(server)
    assert _used(cloud) == (1, 1024)

    cloud.resize_to_verify(server, big)
    assert _used(cloud) == (2, 2048)
    cloud.confirm(server)
    assert _used(cloud) == (2, 2048)
    host = cloud.db.server_get(server.uuid).host
    assert cloud.holds(server.uuid) == cloud.on(
        host, {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
    )
