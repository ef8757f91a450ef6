"""Input that once answered 500 (or took exponential time) answers 4xx and changes nothing."""

import time
from typing import Any

import pytest

from resize_sched.api import name_filter
from tests.functional.api.harness import ALICE, ApiHarness

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
def test_a_zero_limit_is_refused(api: ApiHarness, path: str, version: str | None) -> None:
    api.server(api.flavor("small"))
    fault = _refused(api, 400, "GET", f"{path}?limit=0", version=version)
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
