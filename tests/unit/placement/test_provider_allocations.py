"""``PlacementClient.get_provider_allocations``: path, microversion, shape, errors."""

import pytest

from resize_sched import exception
from resize_sched.placement import client as pc
from tests.unit.placement.test_client import VERSIONS, FakeAdapter, placement_error, response

RP = "6f1b8c55-5a3e-4a55-9d0e-5b3c1e0d9a01"


def test_reads_each_consumer_at_the_error_code_floor() -> None:
    body = {
        "allocations": {
            "c1": {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
            "c2": {"resources": {"DISK_GB": 0}},
        },
        "resource_provider_generation": 7,
    }
    adapter = FakeAdapter(VERSIONS, response(200, body))
    client = pc.PlacementClient(adapter)
    assert client.get_provider_allocations(RP) == {"c1": {"VCPU": 2, "MEMORY_MB": 512}}
    method, url, kwargs = adapter.calls[-1]
    assert (method, url) == ("GET", f"/resource_providers/{RP}/allocations")
    assert kwargs["microversion"] == "1.23" == pc._mv(pc.PROVIDER_ALLOCATIONS_VERSION)


def test_unknown_provider_is_not_found() -> None:
    answer = response(404, placement_error(404, "placement.undefined_code", "No provider"))
    client = pc.PlacementClient(FakeAdapter(VERSIONS, answer))
    with pytest.raises(exception.PlacementNotFound):
        client.get_provider_allocations(RP)
