"""Input that once answered 500 (or took exponential time) answers 4xx and changes nothing."""

import json
import time
from typing import Any

import pytest

from resize_sched.api import faults, name_filter
from resize_sched.api.app import build_app
from tests.functional.api.harness import ADMIN, ALICE, ApiHarness

HUGE = "9" * 5000


def _refused(api: ApiHarness, status: int, method: str, path: str, **kw: Any) -> dict[str, Any]:
    """Send a request, check it was refused with ``status`` and changed nothing."""
    before = api.snapshot()
    response = api.request(method, path, **kw)
    assert response.status_int == status, response.body
    assert response.content_type == "application/json"
    (fault,) = response.json.values()
    assert fault["code"] == status and fault["message"]
    assert api.snapshot() == before
    api.assert_no_cast()
    return fault


@pytest.mark.parametrize(
    ("path", "version"),
    [("/v2.1/flavors", None), ("/v2.1/servers", None), ("/v2.1/os-migrations", "2.59")],
)
def test_a_zero_limit_is_an_empty_page_and_a_negative_one_refused(
    api: ApiHarness, path: str, version: str | None
) -> None:
    api.server(api.flavor("small"))
    response = api.request("GET", f"{path}?limit=0", version=version)
    assert response.status_int == 200, response.json
    (collection,) = response.json.values()
    assert collection == []
    fault = _refused(api, 400, "GET", f"{path}?limit=-1", version=version)
    assert "limit" in fault["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/v2.1/servers/%FF",
        "/v2.1/flavors/%C3%28/os-extra_specs",
        "/v2.1/servers?name=%FF",
        "/v2.1/flavors?marker=%ED%A0%80",
        "/%FF",
    ],
)
def test_a_path_or_query_that_is_not_utf8_is_refused(api: ApiHarness, path: str) -> None:
    _refused(api, 400, "GET", path)


def test_a_delete_at_a_path_that_is_not_utf8_changes_nothing(api: ApiHarness) -> None:
    api.server(api.flavor("small"))
    _refused(api, 400, "DELETE", "/v2.1/servers/%FF%FE")


@pytest.mark.parametrize(
    "headers",
    [
        {"OpenStack-API-Version": f"compute 2.{HUGE}"},
        {"OpenStack-API-Version": f"compute {HUGE}.1"},
        {"X-OpenStack-Nova-API-Version": f"2.{HUGE}"},
    ],
)
def test_a_huge_microversion_is_not_acceptable(api: ApiHarness, headers: dict[str, str]) -> None:
    _refused(api, 406, "GET", "/v2.1/flavors", headers=headers)


@pytest.mark.parametrize("value", ["compute 2.x", f"compute 2.{HUGE}x", "compute 02.1"])
def test_a_malformed_microversion_is_a_bad_request(api: ApiHarness, value: str) -> None:
    _refused(api, 400, "GET", "/v2.1/flavors", headers={"OpenStack-API-Version": value})


@pytest.mark.parametrize("depth", [33, 1000, 50_000])
def test_deeply_nested_json_is_refused(api: ApiHarness, depth: int) -> None:
    api.flavor("small")
    raw = b"[" * depth + b"]" * depth
    _refused(api, 400, "POST", "/v2.1/servers", raw=raw, token=ALICE)
    body = b'{"server": {"name": "x", "flavorRef": "small", "metadata": ' + raw + b"}}"
    _refused(api, 400, "POST", "/v2.1/servers", raw=body, token=ALICE)


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v2.1/servers", b'{"server": {"name": "\\ud800", "flavorRef": "small"}}'),
        ("/v2.1/servers", b'{"server": {"name": "a\\udfffb", "flavorRef": "small"}}'),
        ("/v2.1/flavors", b'{"flavor": {"name": "\\ud800", "ram": 1, "vcpus": 1, "disk": 0}}'),
        ("/v2.1/flavors/small/os-extra_specs", b'{"extra_specs": {"k": "\\udc00"}}'),
    ],
)
def test_an_unpaired_surrogate_is_refused(api: ApiHarness, path: str, raw: bytes) -> None:
    api.flavor("small")
    fault = _refused(api, 400, "POST", path, raw=raw)
    assert "surrogate" in fault["message"]


def test_a_paired_surrogate_escape_is_an_ordinary_character(api: ApiHarness) -> None:
    api.flavor("small")
    raw = b'{"server": {"name": "emoji \\ud83d\\ude00", "flavorRef": "small"}}'
    response = api.request("POST", "/v2.1/servers", raw=raw, token=ALICE)
    assert response.status_int == 202, response.json
    assert api.db.server_get(response.json["server"]["id"]).name == "emoji \U0001f600"
    assert api.next_cast().method == "build_server"


def test_a_catastrophic_name_pattern_runs_in_linear_time(api: ApiHarness) -> None:
    flavor = api.flavor("small")
    api.server(flavor, name="a" * 200 + "!")
    api.server(flavor, name="aaaa")
    started = time.monotonic()
    response = api.request("GET", "/v2.1/servers?name=(a%2B)%2B%24", token=ALICE)
    assert time.monotonic() - started < 2
    assert response.status_int == 200
    assert [s["name"] for s in response.json["servers"]] == ["aaaa"]


@pytest.mark.parametrize(
    "pattern",
    ["(", "(a)%5C1", "(%3F%3Da)", "a" * (name_filter.MAX_PATTERN_LENGTH + 1), "((a{999}){999})"],
)
def test_a_name_pattern_the_engine_refuses_is_a_bad_request(api: ApiHarness, pattern: str) -> None:
    _refused(api, 400, "GET", f"/v2.1/servers?name={pattern}")


def test_the_name_filter_still_matches_as_a_regular_expression(api: ApiHarness) -> None:
    flavor = api.flavor("small")
    for name in ("web-1", "web-2", "db-1"):
        api.server(flavor, name=name)

    def names(query: str) -> list[str]:
        response = api.request("GET", f"/v2.1/servers{query}", token=ALICE)
        return sorted(s["name"] for s in response.json["servers"])

    assert names("?name=web") == ["web-1", "web-2"]
    assert names("?name=%5E%28db%7Cweb%29-1%24") == ["db-1", "web-1"]
    assert names("?name=-%5B12%5D") == ["db-1", "web-1", "web-2"]


def test_a_pattern_over_the_engines_memory_cap_is_refused_not_compiled(api: ApiHarness) -> None:
    """``\\pL{300}`` is a small pattern whose program is megabytes: RE2 builds it
    unless its memory is capped."""
    api.server(api.flavor("small"), name="web")
    fault = _refused(api, 400, "GET", "/v2.1/servers?name=%5CpL%7B300%7D", token=ALICE)
    assert "not a regular expression this API runs" in fault["message"]
    with pytest.raises(faults.BadRequest):
        name_filter.NameFilter(r"\pL{300}")
    # A small repetition of the same class is still a filter.
    response = api.request("GET", "/v2.1/servers?name=%5E%5CpL%7B3%7D%24", token=ALICE)
    assert [s["name"] for s in response.json["servers"]] == ["web"]


_FLAVOR = {"name": "f", "ram": 512, "vcpus": 1, "disk": 1}
_HUGE = "1" * 4301


@pytest.mark.parametrize("field", ["ram", "vcpus", "disk", "swap", "OS-FLV-EXT-DATA:ephemeral"])
@pytest.mark.parametrize("value", [_HUGE, f" {_HUGE} ", "0" * 4300 + "1", "2147483648"])
def test_a_count_too_large_to_convert_is_a_bad_request(
    api: ApiHarness, field: str, value: str
) -> None:
    body = {"flavor": {**_FLAVOR, field: value}}
    fault = _refused(api, 400, "POST", "/v2.1/flavors", body=body, token=ADMIN)
    assert field in fault["message"]


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        # JSON takes an integer of 4,300 digits; turning it into a string does not.
        (
            "/v2.1/flavors",
            b'{"flavor": {"name": "f", "ram": 1, "vcpus": 1, "disk": 1, "id": 1%s}}',
        ),
        ("/v2.1/servers", b'{"server": {"name": "vm", "flavorRef": 1%s}}'),
    ],
)
def test_a_huge_integer_id_is_a_bad_request(api: ApiHarness, path: str, raw: bytes) -> None:
    api.flavor("small")
    _refused(api, 400, "POST", path, raw=raw % (b"0" * 4200), token=ADMIN)


_BAD_NAMES = ["vm\x00", "v\x00m", "vm\n", "vm\r\n", "v\x1bm", "v\x7fm", "v\x85m", "\tvm"]


@pytest.mark.parametrize("name", _BAD_NAMES)
def test_a_server_name_with_control_characters_is_refused(api: ApiHarness, name: str) -> None:
    api.flavor("small")
    body = {"server": {"name": name, "flavorRef": "small"}}
    fault = _refused(api, 400, "POST", "/v2.1/servers", body=body, token=ALICE)
    assert "name" in fault["message"]


@pytest.mark.parametrize("name", _BAD_NAMES)
def test_a_flavor_name_with_control_characters_is_refused(api: ApiHarness, name: str) -> None:
    body = {"flavor": {**_FLAVOR, "name": name}}
    _refused(api, 400, "POST", "/v2.1/flavors", body=body, token=ADMIN)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v2.1/flavors", {"flavor": {**_FLAVOR, "id": "f1\n"}}),
        ("/v2.1/flavors/small/os-extra_specs", {"extra_specs": {"hw:cpu_policy\n": "shared"}}),
        ("/v2.1/flavors/small/os-extra_specs", {"extra_specs": {"hw:cpu_policy": "sh\x00ared"}}),
    ],
)
def test_other_anchored_patterns_match_the_whole_string(
    api: ApiHarness, path: str, body: dict[str, Any]
) -> None:
    api.flavor("small")
    _refused(api, 400, "POST", path, body=body, token=ADMIN)


def test_ordinary_names_still_pass(api: ApiHarness) -> None:
    api.flavor("small")
    for name in ("web 1", "café", "emoji \U0001f600", "x" * 255):
        body = {"server": {"name": name, "flavorRef": "small"}}
        response = api.request("POST", "/v2.1/servers", body, token=ALICE)
        assert response.status_int == 202, (name, response.json)
        assert api.next_cast().method == "build_server"
    body = {"flavor": {**_FLAVOR, "ram": " 2147483647 ", "id": 2147483647}}
    response = api.request("POST", "/v2.1/flavors", body, token=ADMIN)
    assert response.status_int == 200, response.json
    assert response.json["flavor"]["ram"] == 2147483647


def test_links_never_come_from_the_host_header_once_the_prefix_is_set(api: ApiHarness) -> None:
    api.flavor("small")
    headers = {"Host": "evil.example:666", "X-Forwarded-Host": "evil.example"}
    body = {"server": {"name": "vm", "flavorRef": "small"}}
    # Unset (a test deployment), links follow the Host header.
    response = api.request("POST", "/v2.1/servers", body, token=ALICE, headers=headers)
    assert response.location.startswith("http://evil.example:666/v2.1/servers/")
    api.next_cast()

    prefix = "https://compute.example.com/compute"
    api.conf.set_override("compute_link_prefix", prefix + "/", group="api")
    api.app = build_app(api.conf, api.db, api.conductor)
    response = api.request("POST", "/v2.1/servers", body, token=ALICE, headers=headers)
    server_id = response.json["server"]["id"]
    assert response.location == f"{prefix}/v2.1/servers/{server_id}"
    assert {link["href"] for link in response.json["server"]["links"]} == {
        f"{prefix}/v2.1/servers/{server_id}",
        f"{prefix}/servers/{server_id}",
    }
    api.next_cast()
    listed = api.request("GET", "/v2.1/servers?limit=1", token=ALICE, headers=headers).json
    assert listed["servers_links"][0]["href"].startswith(f"{prefix}/v2.1/servers?")
    version = api.request("GET", "/v2.1", token=None, headers=headers).json["version"]
    assert version["links"][0]["href"] == f"{prefix}/v2.1/"
    assert "evil" not in json.dumps([listed, version])
