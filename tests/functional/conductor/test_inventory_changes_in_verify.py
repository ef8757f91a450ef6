"""A host's inventory changes while a resize waits in VERIFY_RESIZE.

An operator lowers ``max_unit`` (with ``total``), ``total``, ``reserved`` or
``allocation_ratio`` on the hosts of a resize waiting in VERIFY_RESIZE, then
confirms or reverts, under every strategy, on the same host and on another.
Placement checks every amount written against the inventory as it is now,
so a decision that wrote again what is already held could be refused for
it. A confirm only releases (it empties the migration consumer), so it is
never refused; a revert writes the old flavor back on the source, so it is
refused exactly when the source no longer admits it, says so in Placement's
words with the right host, leaves everything as it was, and is completed
by the conductor's sweep once the source's inventory changes again.

The resize is mixed (fewer VCPUs, more memory), so that ``max_flavor``'s
same-host claim holds more than the new flavor (its migration holds the
VCPUs the old flavor had beyond the new) and every consumer has something
to lose. Each case counts the conductor's Placement requests for the
decision.
"""

import pytest

from resize_sched import actions, exception
from resize_sched import resources as rs
from resize_sched.conductor import retry
from resize_sched.strategies import Holdings

STRATEGIES = ["legacy", "drop_and_reclaim", "max_flavor"]
PLACES = ["same", "other"]
#: The operator's report (max_unit with total) runs by default; the other
#: changes of the inventory run with the long matrices (``slow``).
CHANGES = [
    "max_unit",
    pytest.param("total", marks=pytest.mark.slow),
    pytest.param("reserved", marks=pytest.mark.slow),
    pytest.param("allocation_ratio", marks=pytest.mark.slow),
]

OLD = {"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
HOST = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 500}

#: What each strategy holds in VERIFY_RESIZE: (server, migration), as
#: (host, amounts) pairs; "src" the server's first host, "dst" the resize's.
VERIFY = {
    ("legacy", "same"): ((("src", NEW),), (("src", OLD),)),
    ("drop_and_reclaim", "same"): ((("src", NEW),), ()),
    ("max_flavor", "same"): ((("src", NEW),), (("src", {"VCPU": 2}),)),
    ("legacy", "other"): ((("dst", NEW),), (("src", OLD),)),
    ("drop_and_reclaim", "other"): ((("dst", NEW),), (("src", OLD),)),
    ("max_flavor", "other"): ((("dst", NEW),), (("src", OLD),)),
}

#: The conductor's Placement requests for a confirm: one write emptying the
#: migration, none when it holds nothing (drop_and_reclaim on the same host).
CONFIRM_REQUESTS = {
    ("legacy", "same"): 1,
    ("drop_and_reclaim", "same"): 0,
    ("max_flavor", "same"): 1,
    ("legacy", "other"): 1,
    ("drop_and_reclaim", "other"): 1,
    ("max_flavor", "other"): 1,
}


def _cloud(make_cloud, strategy, place):
    options = {} if place == "same" else {"resize": {"allow_same_host": False}}
    cloud = make_cloud(strategy, **options)
    cloud.add_host("host1", **HOST)
    if place == "other":
        cloud.add_host("host2", **HOST)
    f_old = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"])
    f_new = cloud.flavor("new", NEW["VCPU"], NEW["MEMORY_MB"], NEW["DISK_GB"])
    server = cloud.boot("vm", f_old, host="host1")
    migration, dest = cloud.resize_to_verify(server, f_new)
    assert dest.same_host == (place == "same")
    return cloud, server, migration


def _expected(cloud, strategy, place):
    names = {"src": "host1", "dst": "host1" if place == "same" else "host2"}
    server, migration = VERIFY[(strategy, place)]
    return (
        rs.add_allocations(*(cloud.on(names[h], res) for h, res in server)),
        rs.add_allocations(*(cloud.on(names[h], res) for h, res in migration)),
    )


def _shrink(cloud, host, change, vcpu_max_unit=None):
    """Lower ``host``'s VCPU inventory: ``max_unit`` to ``vcpu_max_unit``
    (below a flavor), or its capacity to exactly what is used now."""
    rp = cloud.hosts[host]
    inventory, generation = cloud.observer.get_inventories(rp)
    vcpu = dict(inventory["VCPU"])
    used = cloud.usage(host).get("VCPU", 0)
    if change == "max_unit":
        vcpu["max_unit"] = vcpu_max_unit
    elif change == "total":
        vcpu["total"] = used
    elif change == "reserved":
        vcpu["reserved"] = vcpu["total"] - used
    else:
        vcpu["allocation_ratio"] = used / vcpu["total"]
    inventory["VCPU"] = vcpu
    cloud.observer.set_inventory(rp, inventory, generation)


def _restore(cloud, host):
    rp = cloud.hosts[host]
    _inventory, generation = cloud.observer.get_inventories(rp)
    cloud.observer.set_inventory(
        rp,
        {
            "VCPU": rs.inventory_record(HOST["vcpus"]),
            "MEMORY_MB": rs.inventory_record(HOST["memory_mb"]),
            "DISK_GB": rs.inventory_record(HOST["disk_gb"]),
        },
        generation,
    )


def _hosts(place):
    return ["host1"] if place == "same" else ["host1", "host2"]


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_confirm_is_never_refused_for_what_is_held(make_cloud, strategy, place, change):
    cloud, server, migration = _cloud(make_cloud, strategy, place)
    server_holds, migration_holds = _expected(cloud, strategy, place)
    assert cloud.holds(server.uuid) == server_holds
    assert cloud.holds(migration.uuid) == migration_holds
    for host in _hosts(place):
        # NOTE: max_unit below the new flavor (the operator's report).
        _shrink(cloud, host, change, vcpu_max_unit=NEW["VCPU"] - 1)
    cloud.client.reset_request_count()
    cloud.confirm(server)
    assert cloud.client.request_count == CONFIRM_REQUESTS[(strategy, place)]
    dest = "host1" if place == "same" else "host2"
    assert cloud.holds(server.uuid) == cloud.on(dest, NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.migration_get(migration.uuid).status == "confirmed"
    assert cloud.db.server_get(server.uuid).status == "ACTIVE"


#: A revert onto a source whose capacity is exactly what is used now fits
#: wherever the source already held the old flavor for the resize; a
#: same-host drop_and_reclaim gave the old flavor's VCPUs up, so it needs
#: more than is left.
REVERT_FITS = {
    ("legacy", "same"): True,
    ("drop_and_reclaim", "same"): False,
    ("max_flavor", "same"): True,
    ("legacy", "other"): True,
    ("drop_and_reclaim", "other"): True,
    ("max_flavor", "other"): True,
}


@pytest.mark.parametrize(
    "change",
    [
        "total",
        pytest.param("reserved", marks=pytest.mark.slow),
        pytest.param("allocation_ratio", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_revert_onto_a_source_at_capacity_fits_where_it_held_the_room(
    make_cloud, strategy, place, change
):
    cloud, server, migration = _cloud(make_cloud, strategy, place)
    server_holds, migration_holds = _expected(cloud, strategy, place)
    for host in _hosts(place):
        _shrink(cloud, host, change)
    cloud.client.reset_request_count()
    if REVERT_FITS[(strategy, place)]:
        cloud.revert(server)
        assert cloud.client.request_count == 1
        assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
        assert cloud.holds(migration.uuid) == {}
        assert cloud.db.migration_get(migration.uuid).status == "reverted"
        return
    with pytest.raises(exception.ClaimRefused):
        cloud.revert(server)
    # NOTE: the refused write, then the refused provider's generation.
    assert cloud.client.request_count == 2
    assert cloud.holds(server.uuid) == server_holds
    assert cloud.holds(migration.uuid) == migration_holds
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state) == ("VERIFY_RESIZE", None)
    assert "host host1 has not enough room left for the old flavor" in row.fault_message
    assert "exceed the capacity" in row.fault_message


def _sweep(cloud):
    def complete(decision, migration_uuid):
        if decision == "confirm":
            return cloud.resizes.complete_confirm(migration_uuid)
        return cloud.resizes.complete_revert(migration_uuid)

    done = retry.retry_refused(cloud.db, cloud.client, complete)
    cloud.check()
    return done


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_revert_onto_a_source_below_the_old_flavor_waits_and_the_sweep_finishes_it(
    make_cloud, strategy, place
):
    cloud, server, migration = _cloud(make_cloud, strategy, place)
    server_holds, migration_holds = _expected(cloud, strategy, place)
    # NOTE: the source no longer admits the old flavor's VCPUs in one
    # allocation; the new flavor's still fit, so what is held stays valid.
    _shrink(cloud, "host1", "max_unit", vcpu_max_unit=OLD["VCPU"] - 1)
    with pytest.raises(exception.PlacementConflict):
        cloud.revert(server)
    cloud.check()
    assert cloud.holds(server.uuid) == server_holds
    assert cloud.holds(migration.uuid) == migration_holds
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.task_state) == ("VERIFY_RESIZE", None)
    said = row.fault_message
    assert "host host1's inventory no longer admits the old flavor" in said
    assert "violate inventory constraints" in said  # Placement's own words
    assert "other servers" not in said
    assert "stays in VERIFY_RESIZE" in said and "tries the revert again by itself" in said
    assert f"on host {'host1' if place == 'same' else 'host2'}, holding the server" in said
    refused = cloud.db.migration_get(migration.uuid).refused_decision
    assert refused["decision"] == "revert" and refused["provider"] == cloud.hosts["host1"]

    # Nothing changed on the source: the sweep leaves it waiting.
    assert _sweep(cloud) == {}
    assert cloud.db.migration_get(migration.uuid).status == "finished"

    # The operator gives the source its inventory back: the sweep reverts.
    _restore(cloud, "host1")
    assert _sweep(cloud) == {migration.uuid: "revert retried: reverted"}
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    row = cloud.db.server_get(server.uuid)
    assert (row.status, row.host, row.task_state) == ("ACTIVE", "host1", None)
    assert cloud.db.migration_get(migration.uuid).refused_decision is None


def test_the_sweep_does_not_revert_what_the_user_confirmed_meanwhile(make_cloud):
    cloud, server, migration = _cloud(make_cloud, "max_flavor", "same")
    _shrink(cloud, "host1", "max_unit", vcpu_max_unit=OLD["VCPU"] - 1)
    with pytest.raises(exception.PlacementConflict):
        cloud.revert(server)
    _restore(cloud, "host1")
    # The user confirms instead; the sweep comes while the confirm is in
    # progress, and again once it is done.
    begun = actions.begin_confirm(cloud.db, server.uuid)
    assert _sweep(cloud) == {}  # the refusal it recorded is the past
    cloud.resizes.complete_confirm(begun.uuid)
    assert _sweep(cloud) == {}
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.migration_get(migration.uuid).status == "confirmed"


def test_a_resize_claimed_before_the_split_still_confirms_by_shrinking(make_cloud):
    # NOTE: a max_flavor same-host resize claimed before the upgrade: the
    # server holds max(old, new), the migration nothing.
    cloud, server, migration = _cloud(make_cloud, "max_flavor", "same")
    held = rs.add_allocations(cloud.holds(server.uuid), cloud.holds(migration.uuid))
    cloud.deps.executor.apply(
        cloud.db.migration_get(migration.uuid),
        "old shape",
        Holdings(server=held),
    )
    assert cloud.holds(migration.uuid) == {}
    cloud.confirm(server)
    assert cloud.holds(server.uuid) == cloud.on("host1", NEW)
    assert cloud.holds(migration.uuid) == {}
