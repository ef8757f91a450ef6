"""The aggregate data API on every backend: the zone checks made in the same
transaction as the change, and the one-query reads the policies use."""

import pytest

from resize_sched import exception
from resize_sched.db.api import Database
from resize_sched.db.host_api import COMPUTE_BINARY


def _hosts(db: Database, *names: str) -> None:
    for name in names:
        db.service_report(host=name, binary=COMPUTE_BINARY, topic="compute")


def test_zones_hosts_and_tenants(db: Database) -> None:
    _hosts(db, "h1", "h2", "h3")
    az1 = db.aggregate_create("rack1", "az1")
    az1b = db.aggregate_create("rack1b", "az1")
    az2 = db.aggregate_create("rack2", "az2")
    plain = db.aggregate_create("plain")
    db.aggregate_add_host(az1.id, "h1")
    db.aggregate_add_host(az1b.id, "h1")  # the same zone twice is fine
    db.aggregate_add_host(az2.id, "h2")
    db.aggregate_add_host(plain.id, "h3")
    assert db.host_zones() == {"h1": "az1", "h2": "az2"}
    found = db.zone_aggregates(host="h1")
    assert found.zones == {"az1": [az1.uuid, az1b.uuid], "az2": [az2.uuid]}
    assert found.host_zone == "az1"
    assert db.zone_aggregates(host="h3").host_zone is None
    assert db.zone_aggregates().host_zone is None
    db.aggregate_set_metadata(plain.id, {"filter_tenant_id": "p1", "filter_tenant_id2": "p2"})
    db.aggregate_set_metadata(az2.id, {"filter_tenant_idx": "p1", "other_key": "p2"})
    assert db.tenant_aggregates("p1") == sorted([plain.uuid, az2.uuid])
    assert db.tenant_aggregates("p2") == [plain.uuid]
    assert db.tenant_aggregates("p3") == []


def test_a_host_is_never_in_two_zones(db: Database) -> None:
    _hosts(db, "h1", "h2")
    az1 = db.aggregate_create("rack1", "az1")
    az2 = db.aggregate_create("rack2", "az2")
    plain = db.aggregate_create("plain")
    db.aggregate_add_host(az1.id, "h1")
    db.aggregate_add_host(plain.id, "h1")
    with pytest.raises(exception.InvalidAggregateAction, match=r"add host to .*\['az1'\]"):
        db.aggregate_add_host(az2.id, "h1")
    with pytest.raises(exception.InvalidAggregateAction, match="update metadata of"):
        db.aggregate_set_metadata(plain.id, {"availability_zone": "az2"})
    with pytest.raises(exception.InvalidAggregateAction, match="Cannot update aggregate"):
        db.aggregate_update(plain.id, zone={"availability_zone": "az2"})
    # the same zone is no conflict
    assert db.aggregate_update(plain.id, zone={"availability_zone": "az1"}).metadata == {
        "availability_zone": "az1"
    }
    assert db.aggregate_get(az2.id).hosts == ()
    with pytest.raises(exception.AggregateNameExists):
        db.aggregate_create("rack1")
    with pytest.raises(exception.AggregateNameExists):
        db.aggregate_update(plain.id, name="rack2", zone={})
    with pytest.raises(exception.AggregateHostExists):
        db.aggregate_add_host(az1.id, "h1")
    with pytest.raises(exception.ComputeHostNotFound):
        db.aggregate_add_host(az1.id, "nohost")
    with pytest.raises(exception.AggregateHostNotFound):
        db.aggregate_remove_host(az2.id, "h1")
    with pytest.raises(exception.InvalidAggregateAction, match="not empty"):
        db.aggregate_delete(az1.id)
    with pytest.raises(exception.AggregateNotFound):
        db.aggregate_get(999999)
    db.aggregate_remove_host(az1.id, "h1")
    db.aggregate_delete(az1.id)
    assert [a.name for a in db.aggregate_list()] == ["rack2", "plain"]
