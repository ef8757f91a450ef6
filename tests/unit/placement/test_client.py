"""Pure bits of the Placement client: error parsing and mapping, parameters."""

import json
from typing import Any

import pytest
import requests
from keystoneauth1 import exceptions as ks_exc

from resize_sched import exception
from resize_sched.placement import client as pc


def response(status: int, body: Any, url: str = "http://placement/x") -> requests.Response:
    resp = requests.Response()
    resp.status_code = status
    resp._content = body if isinstance(body, bytes) else json.dumps(body).encode()
    resp.url = url
    return resp


def placement_error(status: int, code: str, detail: str) -> dict:
    return {"errors": [{"status": status, "title": "T", "code": code, "detail": detail}]}


class FakeAdapter:
    """Answers each request with the next item (a response or an exception)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str, dict]] = []

    def request(self, url: str, method: str, **kwargs: Any) -> requests.Response:
        self.calls.append((method, url, kwargs))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


VERSIONS = response(200, {"versions": [{"id": "v1.0", "max_version": "1.39"}]})


def test_parse_error_strips_webob_title() -> None:
    body = placement_error(
        409,
        "placement.concurrent_update",
        "There was a conflict when trying to complete your request.\n\n consumer generation "
        "conflict - expected null but got 1  ",
    )
    assert pc.parse_error(response(409, body)) == (
        "placement.concurrent_update",
        "consumer generation conflict - expected null but got 1",
    )


def test_parse_error_of_a_non_json_body() -> None:
    assert pc.parse_error(response(502, b"Bad Gateway")) == ("", "Bad Gateway")


@pytest.mark.parametrize(
    ("status", "code", "detail", "expected"),
    [
        (409, "placement.concurrent_update", "x", exception.ConsumerGenerationConflict),
        (
            409,
            "placement.undefined_code",
            "Unable to allocate inventory: no",
            exception.ClaimRefused,
        ),
        (409, "placement.inventory.inuse", "in use", exception.PlacementConflict),
        (409, "placement.undefined_code", "name taken", exception.PlacementConflict),
        (404, "placement.undefined_code", "no such", exception.PlacementNotFound),
        (400, "placement.undefined_code", "bad", exception.PlacementBadRequest),
        (403, "placement.undefined_code", "forbidden", exception.PlacementError),
        (500, "", "boom", exception.PlacementUnavailable),
        (503, "", "busy", exception.PlacementUnavailable),
    ],
)
def test_error_for_maps_status_and_code(
    status: int, code: str, detail: str, expected: type
) -> None:
    err = pc.error_for("PUT", "http://p/placement/allocations/c", status, code, detail)
    assert type(err) is expected
    assert detail in str(err)
    assert err.kwargs["placement_code"] == code
    assert err.kwargs["status"] == status
    assert err.placement_words == detail
    assert "http://" not in str(err)
    if expected is not exception.ClaimRefused:  # the claim's words say enough
        assert "PUT /placement/allocations/c" in str(err)


def test_parse_version() -> None:
    assert pc.parse_version("1.39") == (1, 39)
    assert pc.parse_version("1.9") < pc.parse_version("1.28")


def test_filters_join_traits_and_repeat_member_of() -> None:
    assert pc._filters(name="n", in_tree="t", required=["A", "!B"], member_of=["a", "in:b,c"]) == [
        ("name", "n"),
        ("in_tree", "t"),
        ("required", "A,!B"),
        ("member_of", "a"),
        ("member_of", "in:b,c"),
    ]
    assert pc._filters() == []


def test_connection_failure_is_unavailable() -> None:
    client = pc.PlacementClient(FakeAdapter(ks_exc.ConnectFailure("refused")))  # type: ignore[arg-type]
    with pytest.raises(exception.PlacementUnavailable) as err:
        client.max_version  # noqa: B018
    assert "refused" in str(err.value)
    assert client.request_count == 1


def test_timeout_is_unavailable() -> None:
    adapter = FakeAdapter(VERSIONS, ks_exc.ConnectTimeout("slow"))
    client = pc.PlacementClient(adapter)  # type: ignore[arg-type]
    with pytest.raises(exception.PlacementUnavailable):
        client.get_usages("rp")


def test_auth_failure_is_a_placement_error() -> None:
    client = pc.PlacementClient(FakeAdapter(ks_exc.Unauthorized("no")))  # type: ignore[arg-type]
    with pytest.raises(exception.PlacementError):
        client.max_version  # noqa: B018


def test_old_server_is_refused() -> None:
    old = response(200, {"versions": [{"id": "v1.0", "max_version": "1.27"}]})
    client = pc.PlacementClient(FakeAdapter(old))  # type: ignore[arg-type]
    with pytest.raises(exception.PlacementVersionUnsupported) as err:
        client.get_usages("rp")
    assert "1.27" in str(err.value) and "1.28" in str(err.value)


def test_unreadable_version_document() -> None:
    client = pc.PlacementClient(FakeAdapter(response(200, {"nope": 1})))  # type: ignore[arg-type]
    with pytest.raises(exception.PlacementError):
        client.max_version  # noqa: B018


def test_writes_pin_the_negotiated_version_and_send_consumer_type() -> None:
    adapter = FakeAdapter(VERSIONS, response(204, b""))
    client = pc.PlacementClient(adapter)  # type: ignore[arg-type]
    write = pc.ConsumerWrite({"rp": {"VCPU": 1, "DISK_GB": 0}}, "p", "u", None, pc.MIGRATION)
    client.put_allocations("c", write)
    method, url, kwargs = adapter.calls[1]
    assert (method, url, kwargs["microversion"]) == ("PUT", "/allocations/c", "1.38")
    assert kwargs["json"] == {
        "allocations": {"rp": {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "MIGRATION",
    }


def test_writes_without_consumer_types_before_1_38() -> None:
    v128 = response(200, {"versions": [{"id": "v1.0", "max_version": "1.28"}]})
    adapter = FakeAdapter(v128, response(204, b""))
    client = pc.PlacementClient(adapter)  # type: ignore[arg-type]
    assert not client.supports_consumer_types
    client.post_allocations({"c": pc.ConsumerWrite({}, "p", "u", 3)})
    _method, _url, kwargs = adapter.calls[1]
    assert kwargs["microversion"] == "1.28"
    assert kwargs["json"] == {
        "c": {"allocations": {}, "project_id": "p", "user_id": "u", "consumer_generation": 3}
    }
