"""Flavors: create, read, soft delete, and bad input (typed errors, nothing written)."""

import pytest

from resize_sched import exception, resources
from resize_sched.db.api import Database


def test_create_and_get(db: Database) -> None:
    flavor = db.flavor_create(
        "m1.small",
        2,
        2048,
        20,
        ephemeral_gb=5,
        swap=1536,
        extra_specs={"resources:CUSTOM_GPU": "1", "trait:HW_CPU_X86_AVX2": "required"},
        flavorid="42",
    )
    got = db.flavor_get("42")
    assert got.id == flavor.id
    assert (got.name, got.vcpus, got.memory_mb, got.root_gb) == ("m1.small", 2, 2048, 20)
    assert (got.ephemeral_gb, got.swap, got.is_public, got.deleted) == (5, 1536, True, 0)
    assert got.created_at.tzinfo is not None
    assert db.flavor_get_by_name("m1.small").flavorid == "42"

    snapshot = got.to_snapshot()
    assert snapshot["id"] == "42"
    request = resources.flavor_request(snapshot)
    assert request.resources == {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 27, "CUSTOM_GPU": 1}
    assert request.required_traits == {"HW_CPU_X86_AVX2"}


def test_default_flavorid_is_a_uuid(db: Database) -> None:
    flavor = db.flavor_create("m1.tiny", 1, 512, 1)
    assert len(flavor.flavorid) == 36
    assert db.flavor_get(flavor.flavorid).name == "m1.tiny"


def test_list_smallest_first_and_public_filter(db: Database) -> None:
    db.flavor_create("big", 8, 16384, 80)
    db.flavor_create("small", 1, 512, 1, is_public=False)
    assert [f.name for f in db.flavor_list()] == ["small", "big"]
    assert [f.name for f in db.flavor_list(is_public=True)] == ["big"]


def test_unknown_flavor(db: Database) -> None:
    with pytest.raises(exception.FlavorNotFound, match="Flavor nope could not be found"):
        db.flavor_get("nope")
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_get_by_name("nope")
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_delete("nope")


def test_soft_delete_frees_the_name(db: Database) -> None:
    old = db.flavor_create("m1", 1, 512, 1, flavorid="1")
    db.flavor_delete("1")
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_get("1")
    assert db.flavor_list() == []
    deleted = db.flavor_get("1", read_deleted=True)
    assert deleted.deleted and deleted.deleted_at is not None
    new = db.flavor_create("m1", 2, 1024, 1, flavorid="1")
    assert new.id != old.id
    assert db.flavor_get("1").vcpus == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vcpus": 0}, "vcpus must be between 1"),
        ({"vcpus": -1}, "vcpus must be between 1"),
        ({"memory_mb": 0}, "memory_mb must be between 1"),
        ({"root_gb": -1}, "root_gb must be between 0"),
        ({"ephemeral_gb": -10}, "ephemeral_gb must be between 0"),
        ({"swap": -1}, "swap must be between 0"),
        ({"vcpus": "2"}, "vcpus must be a whole number"),
        ({"vcpus": True}, "vcpus must be a whole number"),
        ({"vcpus": 2**31}, "vcpus must be between 1"),
        ({"name": "  "}, "name must be a non-empty string"),
        ({"name": "x" * 256}, "name must be at most 255"),
        ({"flavorid": " bad"}, "flavorid ' bad' may only hold"),
        ({"flavorid": "a/b"}, "may only hold"),
        ({"extra_specs": {"resources:VCPU": "lots"}}, "is not a whole number"),
        ({"extra_specs": {"resources:DISK_GB": "-1"}}, "resources:DISK_GB='-1' is negative"),
        ({"extra_specs": {"hw:cpu_policy": 1}}, "extra spec hw:cpu_policy must be a string"),
        ({"is_public": "yes"}, "is_public must be true or false"),
    ],
)
def test_bad_input_writes_nothing(db: Database, kwargs: dict, message: str) -> None:
    args = {"name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1} | kwargs
    with pytest.raises(exception.InvalidFlavor, match=message) as info:
        db.flavor_create(**args)
    assert info.value.code == "resize_sched.invalid.flavor"
    assert str(info.value).startswith("Invalid flavor: ")
    assert db.flavor_list() == []


def test_duplicate_name(db: Database) -> None:
    db.flavor_create("m1", 1, 512, 1, flavorid="1")
    with pytest.raises(exception.FlavorExists, match="A flavor named m1 already exists"):
        db.flavor_create("m1", 2, 1024, 2, flavorid="2")
    assert [f.flavorid for f in db.flavor_list()] == ["1"]


def test_duplicate_flavorid(db: Database) -> None:
    db.flavor_create("m1", 1, 512, 1, flavorid="1")
    with pytest.raises(exception.FlavorExists, match="A flavor with id 1 already exists"):
        db.flavor_create("m2", 2, 1024, 2, flavorid="1")
    assert [f.name for f in db.flavor_list()] == ["m1"]


def test_root_disk_zero_is_allowed(db: Database) -> None:
    # NOTE: as in Nova: a zero root disk means the server boots from a volume.
    assert db.flavor_create("bfv", 1, 512, 0).root_gb == 0


def test_extra_specs_are_updated_as_a_whole_or_not_at_all(db: Database) -> None:
    db.flavor_create("m1", 1, 512, 1, flavorid="m1", extra_specs={"a": "1"})
    updated = db.flavor_update_extra_specs("m1", updates={"resources:CUSTOM_GPU": "2"})
    assert updated.extra_specs == {"a": "1", "resources:CUSTOM_GPU": "2"}
    assert db.flavor_get("m1").extra_specs == {"a": "1", "resources:CUSTOM_GPU": "2"}

    with pytest.raises(exception.InvalidFlavor, match="not a whole number"):
        db.flavor_update_extra_specs("m1", updates={"b": "2", "resources:VCPU": "many"})
    with pytest.raises(exception.FlavorExtraSpecNotFound):
        db.flavor_update_extra_specs("m1", remove="missing")
    assert db.flavor_get("m1").extra_specs == {"a": "1", "resources:CUSTOM_GPU": "2"}

    assert db.flavor_update_extra_specs("m1", remove="a").extra_specs == {
        "resources:CUSTOM_GPU": "2"
    }
    db.flavor_delete("m1")
    with pytest.raises(exception.FlavorNotFound):
        db.flavor_update_extra_specs("m1", updates={"a": "1"})


def test_keys_stored_before_they_were_refused_block_nothing_and_can_be_removed(
    db: Database,
) -> None:
    """A flavor may hold keys this service accepted and ignored before it
    refused them (a release that did not check): the others can still be
    changed, each of those can be removed, and none can be set anew."""
    db.flavor_create("old", 2, 512, 1, flavorid="old")
    stale = {"hw:mem_page_size": "large", "quota:cpu_shares": "1024"}
    with pytest.raises(exception.InvalidFlavor, match="hw:mem_page_size"):
        db.flavor_update_extra_specs("old", updates=stale)
    # NOTE: as an older release stored them: written past today's check.
    with db._writer() as session:
        session.get(type(db.flavor_get("old")), db.flavor_get("old").id).extra_specs = stale
    updated = db.flavor_update_extra_specs("old", updates={"resources:CUSTOM_GPU": "1"})
    assert updated.extra_specs == {**stale, "resources:CUSTOM_GPU": "1"}
    with pytest.raises(exception.InvalidFlavor, match="hw:mem_page_size"):
        db.flavor_update_extra_specs("old", updates={"hw:mem_page_size": "small"})
    db.flavor_update_extra_specs("old", remove="hw:mem_page_size")
    assert db.flavor_update_extra_specs("old", remove="quota:cpu_shares").extra_specs == {
        "resources:CUSTOM_GPU": "1"
    }
