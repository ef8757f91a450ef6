"""Microversion parsing and negotiation."""

import pytest

from resize_sched.api import faults, microversion
from resize_sched.api.microversion import APIVersion


def test_versions_order_numerically() -> None:
    assert APIVersion.parse("2.9") < APIVersion.parse("2.10")
    assert APIVersion.parse("2.47") == APIVersion(2, 47)
    assert str(APIVersion(2, 80)) == "2.80"
    assert APIVersion(2, 61).at_least("2.61") and not APIVersion(2, 60).at_least("2.61")


@pytest.mark.parametrize("text", ["", "2", "2.", ".1", "v2.1", "2.1.1", "02.1", "2.-1"])
def test_malformed_versions_are_refused(text: str) -> None:
    with pytest.raises(faults.BadRequest):
        APIVersion.parse(text)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "2.1"),
        ({"OpenStack-API-Version": "compute 2.47"}, "2.47"),
        ({"OpenStack-API-Version": "COMPUTE latest"}, str(microversion.MAX_VERSION)),
        ({"OpenStack-API-Version": "volume 3.5,compute 2.3"}, "2.3"),
        ({"OpenStack-API-Version": "volume 3.5"}, "2.1"),
        ({"X-OpenStack-Nova-API-Version": "2.10"}, "2.10"),
        (
            {"OpenStack-API-Version": "compute 2.5", "X-OpenStack-Nova-API-Version": "2.9"},
            "2.5",
        ),
    ],
)
def test_from_headers(headers: dict[str, str], expected: str) -> None:
    assert str(microversion.from_headers(headers)) == expected


def test_out_of_range_is_not_acceptable() -> None:
    with pytest.raises(faults.NotAcceptable):
        microversion.from_headers({"OpenStack-API-Version": "compute 2.81"})
    with pytest.raises(faults.NotAcceptable):
        microversion.from_headers({"X-OpenStack-Nova-API-Version": "2.0"})


def test_a_service_without_a_version_is_ignored() -> None:
    # NOTE: as microversion-parse (and so Nova) reads the header.
    assert microversion.from_headers({"OpenStack-API-Version": "compute"}) == APIVersion(2, 1)


def test_a_huge_version_is_not_acceptable() -> None:
    with pytest.raises(faults.NotAcceptable):
        microversion.from_headers({"OpenStack-API-Version": "compute 2." + "9" * 5000})
    with pytest.raises(faults.NotAcceptable):
        microversion.from_headers({"X-OpenStack-Nova-API-Version": "9" * 5000 + ".1"})


def test_response_headers_echo_the_version() -> None:
    headers = dict(microversion.response_headers(APIVersion(2, 61)))
    assert headers["OpenStack-API-Version"] == "compute 2.61"
    assert headers["X-OpenStack-Nova-API-Version"] == "2.61"
    assert headers["Vary"] == "OpenStack-API-Version, X-OpenStack-Nova-API-Version"
