"""Services in the data API (:mod:`resize_sched.db.host_api`) on every backend."""

import datetime
import uuid

import pytest

from resize_sched import exception
from resize_sched.db.api import Database
from resize_sched.db.host_api import COMPUTE_BINARY, service_is_up

INVENTORY = {"VCPU": {"total": 4, "reserved": 0}}


def _report(db: Database, host: str) -> str:
    service, _ = db.compute_node_report(
        host=host, node=host, rp_uuid=str(uuid.uuid4()), inventory=INVENTORY, provider_generation=1
    )
    return service.uuid


def test_disable_enable_with_compare_and_swap(db: Database) -> None:
    service_uuid = _report(db, "h1")
    done = db.service_set_disabled(service_uuid, True, "maintenance", expected_disabled=False)
    assert (done.disabled, done.disabled_reason) == (True, "maintenance")
    # The same write again at once: matched, not a conflict.
    again = db.service_set_disabled(service_uuid, True, "maintenance")
    assert again.disabled
    with pytest.raises(exception.Conflict):
        db.service_set_disabled(service_uuid, True, "other", expected_disabled=False)
    assert db.service_get(service_uuid).disabled_reason == "maintenance"
    enabled = db.service_set_disabled(service_uuid, False, "ignored", expected_disabled=True)
    assert (enabled.disabled, enabled.disabled_reason) == (False, None)
    with pytest.raises(exception.NotFound):
        db.service_set_disabled(str(uuid.uuid4()), True)


def test_a_heartbeat_keeps_the_disabled_flag(db: Database) -> None:
    service_uuid = _report(db, "h1")
    db.service_set_disabled(service_uuid, True, "maintenance")
    _report(db, "h1")
    service = db.service_get(service_uuid)
    assert (service.disabled, service.disabled_reason, service.report_count) == (
        True,
        "maintenance",
        2,
    )


def test_lookups_filters_and_state(db: Database) -> None:
    first, second = _report(db, "h1"), _report(db, "h2")
    assert [s.uuid for s in db.service_list()] == [first, second]
    assert [s.uuid for s in db.service_list(host="h2")] == [second]
    assert [s.uuid for s in db.service_list(binary=COMPUTE_BINARY, host="h1")] == [first]
    assert db.service_list(binary="nova-compute") == []
    assert db.service_get_by_host("h1").uuid == first
    with pytest.raises(exception.NotFound):
        db.service_get_by_host("h3")
    with pytest.raises(exception.NotFound):
        db.service_get(str(uuid.uuid4()))

    service = db.service_get(first)
    seen = service.last_seen_up
    assert service_is_up(service, 60, now=seen + datetime.timedelta(seconds=60))
    assert not service_is_up(service, 60, now=seen + datetime.timedelta(seconds=61))
    forced = db.service_set_forced_down(first, True)
    assert not service_is_up(forced, 60, now=seen)
    assert not db.service_set_forced_down(first, False).forced_down
