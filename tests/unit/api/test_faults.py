"""Domain errors become Compute-style HTTP errors only here."""

import logging

import pytest

from resize_sched import exception
from resize_sched.api import faults


@pytest.mark.parametrize(
    ("error", "status", "name"),
    [
        (exception.FlavorNotFound(flavor_id="x"), 404, "itemNotFound"),
        (exception.ServerNotFound(server_id="x"), 404, "itemNotFound"),
        (exception.Invalid(reason="same flavor"), 400, "badRequest"),
        (exception.InvalidFlavor(reason="ram"), 400, "badRequest"),
        (exception.FlavorExists(name="x"), 409, "conflictingRequest"),
        (
            exception.ServerStateConflict(
                server_id="x", actual="BUILD", operation="resize", expected="ACTIVE"
            ),
            409,
            "conflictingRequest",
        ),
        (faults.Forbidden("admin only"), 403, "forbidden"),
        (faults.NotAcceptable("2.99"), 406, "computeFault"),
        (faults.UnsupportedMediaType("xml"), 415, "badMediaType"),
    ],
)
def test_known_errors(error: Exception, status: int, name: str) -> None:
    response = faults.to_response(error, "req-1")
    assert response.status_int == status
    assert response.content_type == "application/json"
    assert response.json == {name: {"code": status, "message": str(error)}}


def test_fault_headers_are_sent() -> None:
    response = faults.to_response(faults.MethodNotAllowed("no", headers=[("Allow", "GET")]), "r")
    assert response.headers["Allow"] == "GET"
    assert "badMethod" in response.json


@pytest.mark.parametrize(
    "error",
    [RuntimeError("secret detail"), exception.NoValidHost(reason="x"), exception.PlacementError()],
)
def test_anything_else_is_a_logged_500(error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="resize_sched.api.faults"):
        response = faults.to_response(error, "req-42")
    assert response.status_int == 500
    message = response.json["computeFault"]["message"]
    assert "req-42" in message and "secret detail" not in message
    (record,) = caplog.records
    assert record.exc_info is not None and "req-42" in record.getMessage()
