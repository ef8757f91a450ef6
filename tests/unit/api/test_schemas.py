"""Request body schemas."""

from typing import Any

import pytest

from resize_sched.api import faults, schemas


@pytest.mark.parametrize(
    "body",
    [
        {"resize": {"flavorRef": "2"}},
        {"resize": {"flavorRef": 2}},
        {"resize": {"flavorRef": "http://x/flavors/2", "OS-DCF:diskConfig": "AUTO"}},
    ],
)
def test_good_resize_bodies(body: Any) -> None:
    schemas.validate(body, schemas.RESIZE)


@pytest.mark.parametrize(
    "body",
    [
        {"resize": {"flavorRef": ""}},
        {"resize": {"flavorRef": None}},
        {"resize": {"flavorRef": "2", "x": 1}},
        {"resize": {}},
        {"resize": "2"},
    ],
)
def test_bad_resize_bodies(body: Any) -> None:
    with pytest.raises(faults.BadRequest):
        schemas.validate(body, schemas.RESIZE)


def test_messages_name_the_field() -> None:
    with pytest.raises(faults.BadRequest) as caught:
        schemas.validate(
            {"flavor": {"name": "x", "ram": -1, "vcpus": 1, "disk": 0}}, schemas.FLAVOR_CREATE
        )
    assert "flavor/ram" in caught.value.message
    with pytest.raises(faults.BadRequest) as caught:
        schemas.validate(
            {"server": {"name": "x", "flavorRef": "1", "k": 1}}, schemas.SERVER_CREATE
        )
    assert "'k' was unexpected" in caught.value.message


@pytest.mark.parametrize("value", [None, {}, []])
def test_bare_actions_take_any_value_as_nova(value: Any) -> None:
    # NOTE: Nova's schemas leave the value open (Tempest sends {}).
    for name, schema in (
        ("confirmResize", schemas.CONFIRM_RESIZE),
        ("revertResize", schemas.REVERT_RESIZE),
        ("os-stop", schemas.STOP),
        ("os-start", schemas.START),
    ):
        schemas.validate({name: value}, schema)
        with pytest.raises(faults.BadRequest):
            schemas.validate({name: value, "extra": 1}, schema)


def test_counts_take_digit_strings() -> None:
    body = {"flavor": {"name": "x", "ram": "512", "vcpus": 1, "disk": "0", "swap": ""}}
    schemas.validate(body, schemas.FLAVOR_CREATE)
    assert schemas.as_int(" 512 ") == 512
    with pytest.raises(faults.BadRequest):
        schemas.validate({"flavor": {**body["flavor"], "ram": "5x"}}, schemas.FLAVOR_CREATE)
