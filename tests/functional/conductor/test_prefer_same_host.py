"""``[resize] prefer_same_host`` through the resize task, for each strategy.

The real Placement, database, scheduler, executor and task flows; the
conductor's Placement client is spied on (its requests still go out) so that
the queries made can be asserted exactly. ``Cloud.check()`` asserts the
invariants of doc/design.rst after every step.
"""

from typing import Any

import pytest

from resize_sched import resources as rs
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from resize_sched.scheduler.manager import Selection
from tests.functional.fixtures.cloud import Cloud, expect_no_valid_host
from tests.functional.fixtures.spy import Spy

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
#: Every query asks only for hosts of this deployment that are not disabled.
ROOTS = {"root_required": f"{DEFAULT_OWNER_TRAIT},!COMPUTE_STATUS_DISABLED"}
ALL_HOSTS_QUERY = {"resources": "DISK_GB:20,MEMORY_MB:2048,VCPU:2", "limit": "1000", **ROOTS}


#: Holdings on the source in VERIFY_RESIZE: (server, migration).
SAME_HOST_HOLDS = {
    "legacy": (NEW, OLD),
    "drop_and_reclaim": (NEW, {}),
    "max_flavor": (rs.maximum(OLD, NEW), {}),
}

#: Requests from prepare to a same-host claim: prepare's write (none for
#: max_flavor, which moves nothing), the source's usage, the claim.
SAME_HOST_REQUESTS = {"legacy": 3, "drop_and_reclaim": 3, "max_flavor": 2}


def _cloud(make_cloud: Any, strategy: str, host1_vcpus: int) -> tuple[Cloud, Any, Any]:
    cloud = make_cloud(strategy, resize={"prefer_same_host": True})
    cloud.add_host("host1", vcpus=host1_vcpus, memory_mb=16384, disk_gb=100)
    # host2 is much emptier: without prefer_same_host the weigher would pick it.
    cloud.add_host("host2", vcpus=16, memory_mb=65536, disk_gb=500)
    f_old = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"])
    f_new = cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"])
    server = cloud.boot("vm", f_old, host="host1")
    cloud.check()
    return cloud, server, f_new


def _reads(spy: Spy) -> list[str]:
    """What was read, in order. The source's compute service reports it, so
    the source is judged from its usage (see Scheduler._judge_source)."""
    return [path for method, path, _ in spy.calls if method == "GET"]


def _journal(cloud: Cloud, migration_uuid: str) -> list[tuple[str, str]]:
    return [(e.phase, e.state) for e in cloud.db.journal_list(migration_uuid)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_source_fits_only_the_source_is_asked(make_cloud: Any, strategy: str) -> None:
    cloud, server, f_new = _cloud(make_cloud, strategy, host1_vcpus=8)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    cloud.check()
    spy = Spy(cloud.client)
    cloud.client.reset_request_count()

    dest = cloud.resizes.schedule(migration.uuid)
    cloud.check()

    h1 = cloud.hosts["host1"]
    assert _reads(spy) == [f"/resource_providers/{h1}/usages"]
    assert cloud.client.request_count == SAME_HOST_REQUESTS[strategy]
    assert (dest.host, dest.same_host) == ("host1", True)
    server_holds, migration_holds = SAME_HOST_HOLDS[strategy]
    assert cloud.holds(server.uuid) == cloud.on("host1", server_holds)
    assert cloud.holds(migration.uuid) == cloud.on("host1", migration_holds)
    assert cloud.usage("host2") == {}
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.dest_host, migration.alternates) == (
        "migrating",
        "host1",
        [],
    )

    cloud.resizes.finish(migration.uuid)
    cloud.check()
    assert cloud.db.server_get(server.uuid).host == "host1"
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == NEW


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_source_does_not_fit_other_hosts_are_used(make_cloud: Any, strategy: str) -> None:
    # host1 holds exactly the old flavor: no strategy can fit the new one there.
    cloud, server, f_new = _cloud(make_cloud, strategy, host1_vcpus=1)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    spy = Spy(cloud.client)

    dest = cloud.resizes.schedule(migration.uuid)
    cloud.check()

    h1 = cloud.hosts["host1"]
    assert _reads(spy) == [f"/resource_providers/{h1}/usages", "/allocation_candidates"]
    assert spy.candidate_queries() == [ALL_HOSTS_QUERY]
    assert (dest.host, dest.same_host) == ("host2", False)
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)

    cloud.resizes.finish(migration.uuid)
    cloud.check()
    cloud.revert(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host2") == {}
    assert cloud.db.server_get(server.uuid).host == "host1"


#: VCPUs a squatter takes on host1 (4 VCPUs) between the source-only answer
#: and the claim: the new flavor no longer fits on the source, while the old
#: one still does (drop_and_reclaim must re-claim it there for the migration).
SQUAT = {"legacy": 2, "drop_and_reclaim": 3, "max_flavor": 3}

#: The journal of that resize: the source's claim abandoned, host2's applied.
REFUSED_JOURNAL = {
    "legacy": [("prepare", "applied"), ("claim", "abandoned"), ("claim", "applied")],
    "drop_and_reclaim": [("prepare", "applied"), ("claim", "abandoned"), ("claim", "applied")],
    "max_flavor": [("claim", "abandoned"), ("claim", "applied")],
}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_source_refused_after_selection_asks_again_without_it(
    make_cloud: Any, strategy: str
) -> None:
    cloud, server, f_new = _cloud(make_cloud, strategy, host1_vcpus=4)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)
    selections: list[Selection] = []

    def squat_after_source_only(selection: Selection) -> None:
        selections.append(selection)
        if not selection.complete:
            # NOTE: no invariant check here: a prepare that moves usage
            # nowhere (legacy's old flavor to the migration) is still being
            # written beside the query, and is checked once it has landed.
            cloud.squat("host1", VCPU=SQUAT[strategy])

    cloud.after_scheduling(squat_after_source_only)
    spy = Spy(cloud.client)

    dest = cloud.resizes.schedule(migration.uuid)
    cloud.check()

    h1, h2 = cloud.hosts["host1"], cloud.hosts["host2"]
    assert [s.complete for s in selections] == [False, True]
    assert [[d.host for d in s.destinations] for s in selections] == [["host1"], ["host2"]]
    assert selections[0].destinations[0].same_host
    assert _reads(spy) == [f"/resource_providers/{h1}/usages", "/allocation_candidates"]
    assert spy.candidate_queries() == [ALL_HOSTS_QUERY]
    assert (dest.host, dest.same_host) == ("host2", False)
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    assert cloud.usage("host1") == rs.add(OLD, {"VCPU": SQUAT[strategy]})
    migration = cloud.db.migration_get(migration.uuid)
    assert migration.tried == [h1]
    assert (migration.status, migration.dest_rp_uuid) == ("migrating", h2)
    assert _journal(cloud, migration.uuid) == REFUSED_JOURNAL[strategy]

    cloud.resizes.finish(migration.uuid)
    cloud.check()
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host2", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.usage("host1") == {"VCPU": SQUAT[strategy]}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_source_refused_and_no_other_host_restores(make_cloud: Any, strategy: str) -> None:
    cloud = make_cloud(strategy, resize={"prefer_same_host": True})
    cloud.add_host("host1", vcpus=4, memory_mb=16384, disk_gb=100)
    f_old = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"])
    f_new = cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"])
    server = cloud.boot("vm", f_old)
    migration = cloud.resizes.begin(server.uuid, f_new.flavorid)

    def squat_after_source_only(selection: Selection) -> None:
        if not selection.complete:
            cloud.squat("host1", VCPU=SQUAT[strategy])

    cloud.after_scheduling(squat_after_source_only)
    err = expect_no_valid_host(lambda: cloud.resizes.schedule(migration.uuid), "deferred")
    assert "DISK_GB:20,MEMORY_MB:2048,VCPU:2" in err.reason
    cloud.check()
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    migration = cloud.db.migration_get(migration.uuid)
    assert (migration.status, migration.error_kind) == ("error", "deferred")
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state, row.host) == ("ACTIVE", None, "host1")
