"""``resize-sched-manage placement sync_aggregates``: our aggregates put back
on their hosts' providers in Placement, every other aggregate left alone."""

import uuid
from typing import Any

import pytest

from resize_sched.placement import aggregates as mirror

FOREIGN = str(uuid.uuid4())


def _set(cloud: Any, rp: str, aggregates: list[str]) -> None:
    _current, generation = cloud.observer.get_aggregates(rp)
    cloud.observer.set_aggregates(rp, aggregates, generation)


def _aggregates(cloud: Any, *hosts: str) -> list[frozenset[str]]:
    return [cloud.observer.get_aggregates(cloud.hosts[h])[0] for h in hosts]


@pytest.mark.parametrize("dry_run", [True, False])
def test_sync_repairs_drift_and_leaves_others_alone(make_cloud: Any, run: Any, dry_run: bool):
    cloud = make_cloud()
    for host in ("h1", "h2", "h3"):
        cloud.add_host(host, vcpus=4, memory_mb=4096, disk_gb=40)
    agg = cloud.db.aggregate_create("rack", "az1")
    cloud.db.aggregate_add_host(agg.id, "h1")
    cloud.db.aggregate_add_host(agg.id, "h3")
    mirror.add_host(cloud.db, cloud.observer, "h3", agg.uuid)
    # drift: h1 never got it (and has someone else's); h2 got it by hand
    _set(cloud, cloud.hosts["h1"], [FOREIGN])
    _set(cloud, cloud.hosts["h2"], [FOREIGN, agg.uuid])
    command = run(cloud)
    args = ["placement", "sync_aggregates", *(["--dry-run"] if dry_run else [])]
    code, out, _err = command(*args)
    assert code == 0
    add, remove = ("would add", "would remove") if dry_run else ("added", "removed")
    h1, h2 = cloud.hosts["h1"], cloud.hosts["h2"]
    assert out == [
        f"{add} provider {h1} (host h1) to aggregate {agg.uuid}",
        f"{remove} provider {h2} (host h2) from aggregate {agg.uuid}",
    ]
    if dry_run:
        assert _aggregates(cloud, "h1", "h2", "h3") == [
            {FOREIGN},
            {FOREIGN, agg.uuid},
            {agg.uuid},
        ]
        return
    assert _aggregates(cloud, "h1", "h2", "h3") == [{FOREIGN, agg.uuid}, {FOREIGN}, {agg.uuid}]
    code, out, _err = command(*args)
    assert (code, out) == (0, ["every provider's aggregates match: nothing to change"])


def test_sync_reports_hosts_without_a_provider(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud()
    cloud.db.service_report(host="h9", binary="resize-sched-compute", topic="compute")
    agg = cloud.db.aggregate_create("rack")
    cloud.db.aggregate_add_host(agg.id, "h9")
    code, out, _err = run(cloud)("placement", "sync_aggregates")
    assert (code, out) == (0, ["host h9 is in an aggregate but has no resource provider yet"])
