"""Servers and request specs: CRUD, project scoping, compare-and-swap updates."""

import datetime

import pytest

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.api import Database


@pytest.fixture
def flavor(db: Database) -> models.Flavor:
    return db.flavor_create("m1", 2, 2048, 10, flavorid="1")


def _active(db: Database, flavor: object, **kwargs: object) -> models.Server:
    args: dict = {
        "name": "vm",
        "project_id": "p1",
        "user_id": "u1",
        "flavor": flavor,
        "status": models.STATUS_ACTIVE,
        "vm_state": models.VM_ACTIVE,
        "task_state": None,
        "host": "host1",
        "node": "node1",
        "rp_uuid": "11111111-1111-1111-1111-111111111111",
    }
    return db.server_create(**(args | kwargs))


def test_create_snapshots_the_flavor(db: Database, flavor: models.Flavor) -> None:
    server = db.server_create(name="vm", project_id="p1", user_id="u1", flavor=flavor)
    assert (server.status, server.vm_state, server.task_state) == (
        "BUILD",
        "building",
        "scheduling",
    )
    got = db.server_get(server.uuid)
    assert got.flavor == flavor.to_snapshot()
    assert got.needs_heal is False
    assert got.created_at.tzinfo is not None
    # The snapshot outlives the flavor.
    db.flavor_delete("1")
    assert db.server_get(server.uuid).flavor["vcpus"] == 2


def test_get_is_scoped_to_the_project(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    assert db.server_get(server.uuid, project_id="p1").uuid == server.uuid
    with pytest.raises(exception.ServerNotFound, match=server.uuid):
        db.server_get(server.uuid, project_id="p2")
    with pytest.raises(exception.ServerNotFound):
        db.server_get("00000000-0000-0000-0000-000000000000")


def test_list(db: Database, flavor: models.Flavor) -> None:
    a = _active(db, flavor, name="a")
    b = _active(db, flavor, name="b", project_id="p2", host="host2")
    assert {s.uuid for s in db.server_list()} == {a.uuid, b.uuid}
    assert [s.uuid for s in db.server_list("p2")] == [b.uuid]
    assert [s.uuid for s in db.server_list(host="host1")] == [a.uuid]
    db.server_update(a.uuid, needs_heal=True)
    assert [s.uuid for s in db.server_list(needs_heal=True)] == [a.uuid]


def test_bad_server_input(db: Database, flavor: models.Flavor) -> None:
    with pytest.raises(exception.Invalid, match="unknown server status 'RUNNING'"):
        _active(db, flavor, status="RUNNING")
    with pytest.raises(exception.Invalid, match="name must be a non-empty string"):
        _active(db, flavor, name="")
    with pytest.raises(exception.InvalidFlavor, match="bad flavor snapshot"):
        _active(db, {"name": "no sizes"})
    assert db.server_list() == []
    server = _active(db, flavor)
    with pytest.raises(exception.Conflict, match="already exists"):
        _active(db, flavor, uuid=server.uuid)


def test_update_with_expected_state(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    fault_at = datetime.datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)
    updated = db.server_update(
        server.uuid,
        expected={"status": "ACTIVE", "task_state": (None, "resize_prep")},
        fault_message="boom",
        fault_code=500,
        fault_at=fault_at,
    )
    assert updated.fault_message == "boom"
    assert updated.fault_at == fault_at
    assert updated.updated_at is not None and updated.updated_at.tzinfo is not None

    with pytest.raises(exception.ServerStateConflict) as info:
        db.server_update(server.uuid, expected={"status": "ERROR"}, status="ACTIVE")
    assert "is status=ACTIVE" in str(info.value)
    assert "needs it to be status=ERROR" in str(info.value)
    with pytest.raises(exception.Invalid, match="cannot update server field"):
        db.server_update(server.uuid, uuid="other")
    with pytest.raises(exception.Invalid, match="cannot update server field"):
        db.server_update(server.uuid, expected={"no_such_column": 1})
    with pytest.raises(exception.ServerNotFound):
        db.server_update("00000000-0000-0000-0000-000000000000", status="ACTIVE")


def test_update_with_new_flavor_and_timezone(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    big = db.flavor_create("m2", 4, 4096, 20, flavorid="2")
    # A non-UTC aware time comes back as the same instant in UTC.
    cet = datetime.timezone(datetime.timedelta(hours=1))
    when = datetime.datetime(2030, 1, 1, 12, 0, tzinfo=cet)
    updated = db.server_update(server.uuid, flavor=big, fault_at=when)
    assert updated.flavor["id"] == "2"
    assert updated.fault_at == when
    assert updated.fault_at.utcoffset() == datetime.timedelta(0)


def test_start_resize(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    resized = db.server_start_resize(server.uuid)
    assert (resized.status, resized.vm_state, resized.task_state) == (
        "RESIZE",
        "active",
        "resize_prep",
    )
    with pytest.raises(exception.ServerStateConflict) as info:
        db.server_start_resize(server.uuid)
    message = str(info.value)
    assert message == (
        f"Server {server.uuid} is status=RESIZE, vm_state=active, task_state=resize_prep, "
        "needs_heal=False; resize needs it to be status=ACTIVE|SHUTOFF, "
        "vm_state=active|stopped, task_state=None, needs_heal=False."
    )
    assert info.value.code == "resize_sched.conflict.server_state"


def test_start_resize_refuses_a_server_to_heal(db: Database, flavor: models.Flavor) -> None:
    """The compare-and-swap itself refuses it: a flag set after a check cannot slip by."""
    server = _active(db, flavor)
    db.server_update(server.uuid, needs_heal=True)
    with pytest.raises(exception.ServerStateConflict, match="needs_heal=True"):
        db.server_start_resize(server.uuid)
    assert db.server_get(server.uuid).status == "ACTIVE"


def test_start_resize_refuses_building_server(db: Database, flavor: models.Flavor) -> None:
    server = db.server_create(name="vm", project_id="p1", user_id="u1", flavor=flavor)
    with pytest.raises(exception.ServerStateConflict, match="is status=BUILD"):
        db.server_start_resize(server.uuid)
    assert db.server_get(server.uuid).task_state == "scheduling"


def test_delete(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    db.server_delete(server.uuid)
    with pytest.raises(exception.ServerNotFound):
        db.server_get(server.uuid)
    assert db.server_list() == []
    gone = db.server_get(server.uuid, read_deleted=True)
    assert (gone.status, gone.vm_state, gone.task_state) == ("DELETED", "deleted", None)
    assert gone.deleted_at is not None
    assert [s.uuid for s in db.server_list(read_deleted=True)] == [server.uuid]
    with pytest.raises(exception.ServerNotFound):
        db.server_start_resize(server.uuid)


def test_request_spec(db: Database, flavor: models.Flavor) -> None:
    server = _active(db, flavor)
    spec = db.request_spec_create(
        server.uuid,
        resources={"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 0},
        required_traits=["HW_CPU_X86_AVX2"],
        ignore_hosts=["bad"],
        scheduler_hints={"group": "g1"},
    )
    assert spec.resources == {"VCPU": 2, "MEMORY_MB": 2048}
    got = db.request_spec_get(server.uuid)
    assert (got.required_traits, got.ignore_hosts, got.force_hosts) == (
        ["HW_CPU_X86_AVX2"],
        ["bad"],
        [],
    )
    assert got.scheduler_hints == {"group": "g1"}
    updated = db.request_spec_update(server.uuid, resources={"VCPU": 4}, force_hosts=["h2"])
    assert (updated.resources, updated.force_hosts) == ({"VCPU": 4}, ["h2"])
    assert updated.ignore_hosts == ["bad"]


def test_request_spec_errors(db: Database, flavor: models.Flavor) -> None:
    with pytest.raises(exception.RequestSpecNotFound):
        db.request_spec_get("nope")
    with pytest.raises(exception.ServerNotFound):
        db.request_spec_create("nope", resources={}, required_traits=[])
    server = _active(db, flavor)
    with pytest.raises(exception.Invalid, match="negative amount"):
        db.request_spec_create(server.uuid, resources={"VCPU": -1}, required_traits=[])
    with pytest.raises(exception.Invalid, match="list of strings"):
        db.request_spec_create(server.uuid, resources={}, required_traits="HW_X")
    db.request_spec_create(server.uuid, resources={"VCPU": 1}, required_traits=[])
    with pytest.raises(exception.Conflict, match="already has a request spec"):
        db.request_spec_create(server.uuid, resources={"VCPU": 1}, required_traits=[])
    with pytest.raises(exception.Invalid, match="per-attempt state"):
        db.request_spec_update(server.uuid, retries=1)
    with pytest.raises(exception.Invalid, match="per-attempt state"):
        db.request_spec_update(server.uuid, alternates=[])
    with pytest.raises(exception.RequestSpecNotFound):
        db.request_spec_update("nope", resources={})
