"""Placement's errors: which are permanent, what they quote, how the request reads."""

import json

import pytest
import requests

from resize_sched import exception
from resize_sched.placement import errors

URL = "http://placement.example/placement/allocations/c?in_tree=x%2Cy&resources=VCPU%3A2"


@pytest.mark.parametrize(
    ("status", "code", "detail", "permanent"),
    [
        (400, "placement.undefined_code", "No such resource class CUSTOM_NOPE.", True),
        (409, "", "Unable to allocate inventory: would violate inventory constraints.", True),
        (409, "", "Unable to allocate inventory: would exceed the capacity.", True),
        (409, "placement.inventory.inuse", "in use", True),
        (404, "", "No resource provider with uuid x found", True),
        (403, "", "Policy does not allow placement:allocations:update", True),
        (409, errors.CONCURRENT_UPDATE, "consumer generation conflict", False),
        (429, "", "slow down", False),
        (500, "", "boom", False),
        (503, "", "busy", False),
    ],
)
def test_a_refusal_is_permanent_and_an_outage_transient(status, code, detail, permanent) -> None:
    exc = errors.error_for("PUT", URL, status, code, detail, path="/allocations/c")
    assert exc.permanent is permanent
    assert exc.transient is not permanent
    assert exc.placement_words == detail


def test_errors_raised_without_an_answer_are_classified_by_kind() -> None:
    assert exception.PlacementUnavailable(method="GET", url="/", reason="refused").transient
    # What the executors raise once their re-reads are used up: transient.
    assert exception.PlacementConflict(
        method="POST", url="/allocations", placement_code=errors.CONCURRENT_UPDATE, detail="x"
    ).transient
    assert exception.ClaimRefused(detail="no room for 2 VCPU").permanent
    assert exception.PlacementError(reason="authentication failed").transient


def test_the_request_reads_as_method_and_path_with_its_query_decoded() -> None:
    exc = errors.error_for(
        "GET", URL, 400, "placement.undefined_code", "bad", path="/allocations/c"
    )
    assert str(exc) == ("Placement rejected GET /allocations/c?in_tree=x,y&resources=VCPU:2: bad")
    assert exc.kwargs["url"] == "/allocations/c?in_tree=x,y&resources=VCPU:2"


def test_without_the_path_asked_the_answered_address_loses_its_host() -> None:
    assert errors.shown_request(URL) == "/placement/allocations/c?in_tree=x,y&resources=VCPU:2"
    assert errors.shown_request("/resource_providers") == "/resource_providers"


def test_a_meaningless_error_code_is_not_quoted() -> None:
    exc = errors.error_for("GET", "http://p/x", 403, "placement.undefined_code", "no", path="/x")
    assert "undefined_code" not in str(exc)
    assert str(exc) == "Placement request failed: GET /x answered HTTP 403: no"


def _response(status: int, body: bytes, reason: str = "") -> requests.Response:
    resp = requests.Response()
    resp.status_code, resp._content, resp.reason = status, body, reason
    return resp


def test_a_proxys_page_is_quoted_as_text_without_markup() -> None:
    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
    assert errors.parse_error(_response(502, page)) == ("", "502 Bad Gateway Bad Gateway")
    assert errors.parse_error(_response(504, b"", "Gateway Timeout")) == ("", "Gateway Timeout")
    long = errors.parse_error(_response(502, b"x " * 500))[1]
    assert len(long) == 200 and long.endswith("...")


def test_an_error_without_a_detail_gives_its_title() -> None:
    body = json.dumps({"errors": [{"status": 409, "title": "Conflict", "code": "c"}]})
    assert errors.parse_error(_response(409, body.encode())) == ("c", "Conflict")
