"""``/v2.1/flavors/{id}/os-extra_specs``: read by anyone who sees the flavor,
written by an administrator, checked before anything is stored."""

import pytest

from resize_sched import exception
from resize_sched import resources as rs
from tests.functional.api.harness import ALICE, ApiHarness

BASE = "/v2.1/flavors/m1/os-extra_specs"


@pytest.fixture
def flavor(api: ApiHarness):
    return api.flavor("m1", vcpus=2, memory_mb=1024, extra_specs={"hw:cpu_policy": "shared"})


def test_set_read_replace_and_remove(api: ApiHarness, flavor) -> None:
    response = api.request(
        "POST", BASE, {"extra_specs": {"resources:CUSTOM_FPGA": 1, "trait:HW_GPU": "required"}}
    )
    assert response.status_int == 200
    assert response.json == {
        "extra_specs": {"resources:CUSTOM_FPGA": "1", "trait:HW_GPU": "required"}
    }
    listed = api.request("GET", BASE, token=ALICE)
    assert listed.json == {
        "extra_specs": {
            "hw:cpu_policy": "shared",
            "resources:CUSTOM_FPGA": "1",
            "trait:HW_GPU": "required",
        }
    }
    # What the scheduler will ask Placement for, from now on.
    request = rs.flavor_request(api.db.flavor_get("m1").to_snapshot())
    assert request.resources["CUSTOM_FPGA"] == 1
    assert request.required_traits == {"HW_GPU"}

    key = f"{BASE}/resources:CUSTOM_FPGA"
    assert api.request("PUT", key, {"resources:CUSTOM_FPGA": "2"}).json == {
        "resources:CUSTOM_FPGA": "2"
    }
    assert api.request("GET", key, token=ALICE).json == {"resources:CUSTOM_FPGA": "2"}
    deleted = api.request("DELETE", key)
    assert (deleted.status_int, deleted.body) == (200, b"")
    assert api.request("GET", key).status_int == 404
    assert "resources:CUSTOM_FPGA" not in api.db.flavor_get("m1").extra_specs
    # openstacksdk and novaclient read them inline too, from 2.61.
    shown = api.request("GET", "/v2.1/flavors/m1", version="2.61").json["flavor"]
    assert shown["extra_specs"] == {"hw:cpu_policy": "shared", "trait:HW_GPU": "required"}


def test_a_server_keeps_the_specs_it_was_built_with(api: ApiHarness, flavor) -> None:
    server = api.server(flavor)
    api.request("POST", BASE, {"extra_specs": {"resources:CUSTOM_FPGA": "1"}})
    assert "resources:CUSTOM_FPGA" not in api.db.server_get(server.uuid).flavor["extra_specs"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", BASE, {"extra_specs": {"resources:VCPU": "two"}}, 400),
        ("POST", BASE, {"extra_specs": {"resources:lower_case": "1"}}, 400),
        ("POST", BASE, {"extra_specs": {"bad/key": "1"}}, 400),
        ("POST", BASE, {"extra_specs": {"k": "x" * 256}}, 400),
        ("POST", BASE, {"extra_specs": {"k": None}}, 400),
        ("POST", BASE, {"extra_specs": []}, 400),
        ("POST", BASE, {"specs": {}}, 400),
        ("PUT", f"{BASE}/a", {"b": "1"}, 400),
        ("PUT", f"{BASE}/a", {"a": "1", "b": "2"}, 400),
        ("PUT", f"{BASE}/resources:VCPU", {"resources:VCPU": "-"}, 400),
        # m1's 2 vCPUs cannot be split over 3 guest NUMA cells.
        ("POST", BASE, {"extra_specs": {"hw:numa_nodes": "3"}}, 400),
        ("PUT", f"{BASE}/hw:numa_nodes", {"hw:numa_nodes": "0"}, 400),
        (
            "POST",
            BASE,
            {"extra_specs": {"hw:numa_nodes": "2", "group_policy": "none"}},
            400,
        ),
        ("DELETE", f"{BASE}/missing", None, 404),
        ("GET", f"{BASE}/missing", None, 404),
        ("GET", "/v2.1/flavors/nope/os-extra_specs", None, 404),
        ("POST", "/v2.1/flavors/nope/os-extra_specs", {"extra_specs": {"a": "1"}}, 404),
    ],
)
def test_refusals_change_nothing(api: ApiHarness, flavor, method, path, body, status) -> None:
    before = api.snapshot()
    response = api.request(method, path, body)
    assert response.status_int == status, response.body
    assert api.snapshot() == before


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", BASE, {"extra_specs": {"a": "1"}}),
        ("PUT", f"{BASE}/hw:cpu_policy", {"hw:cpu_policy": "dedicated"}),
        ("DELETE", f"{BASE}/hw:cpu_policy", None),
    ],
)
def test_only_an_administrator_writes(api: ApiHarness, flavor, method, path, body) -> None:
    before = api.snapshot()
    assert api.request(method, path, body, token=ALICE).status_int == 403
    assert api.snapshot() == before


def test_a_private_flavor_s_specs_are_hidden_like_the_flavor(api: ApiHarness) -> None:
    api.flavor("secret", is_public=False, extra_specs={"a": "1"})
    assert api.request("GET", "/v2.1/flavors/secret/os-extra_specs", token=ALICE).status_int == 404
    assert api.request("GET", "/v2.1/flavors/secret/os-extra_specs").json == {
        "extra_specs": {"a": "1"}
    }


@pytest.mark.parametrize(
    ("method", "path", "body", "words"),
    [
        (
            "POST",
            BASE,
            {"extra_specs": {"resources:CUSTOM_FPGA": "1", "hw:cpu_cores": "2"}},
            "extra spec hw:cpu_cores is not honoured by this service: guest hardware",
        ),
        (
            "PUT",
            f"{BASE}/hw:mem_page_size",
            {"hw:mem_page_size": "large"},
            "extra spec hw:mem_page_size is not honoured by this service: huge pages",
        ),
        (
            "POST",
            BASE,
            {"extra_specs": {"quota:cpu_shares": "10"}},
            "extra spec quota:cpu_shares is not honoured",
        ),
        (
            "POST",
            BASE,
            {"extra_specs": {"hw:cpu_policy": "mixed"}},
            "hw:cpu_policy=mixed needs hw:cpu_dedicated_mask",
        ),
        (
            "PUT",
            f"{BASE}/hw:cpu_thread_policy",
            {"hw:cpu_thread_policy": "isolate"},
            "hw:cpu_thread_policy needs pinned CPUs",
        ),
    ],
)
def test_a_spec_not_honoured_is_refused_naming_it_and_why(
    api: ApiHarness, flavor, method, path, body, words
) -> None:
    before = api.snapshot()
    response = api.request(method, path, body)
    assert response.status_int == 400, response.body
    assert words in response.body.decode()
    assert api.snapshot() == before


def test_keys_nova_ignores_pass_and_cpu_policy_is_claimed(api: ApiHarness, flavor) -> None:
    specs = {"key1": "value1", "custom:x": "y", "hw:cpu_policy": "dedicated"}
    assert api.request("POST", BASE, {"extra_specs": specs}).status_int == 200
    request = rs.flavor_request(api.db.flavor_get("m1").to_snapshot())
    assert request.resources == {"PCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 1}


def test_a_flavor_created_with_a_spec_not_honoured_is_refused(api: ApiHarness) -> None:
    with pytest.raises(exception.InvalidFlavor, match="hw:pmem is not honoured"):
        api.flavor("pm", extra_specs={"hw:pmem": "SMALL"})
    with pytest.raises(exception.InvalidFlavor, match="names guest CPUs"):
        api.flavor(
            "mx", vcpus=2, extra_specs={"hw:cpu_policy": "mixed", "hw:cpu_dedicated_mask": "5"}
        )
    assert api.db.flavor_list() == []
