"""The route table and the router, with stand-in handlers."""

from typing import Any

import pytest
import webob

from resize_sched.api import app as api_app
from resize_sched.api.app import ROUTES, Route, Router
from resize_sched.api.request import REQUEST_ID_KEY, json_response


def _echo(state: Any, req: Any, **params: str) -> webob.Response:
    return json_response({"params": params, "version": str(req.version)})


def _boom(state: Any, req: Any) -> webob.Response:
    raise RuntimeError("boom")


ROUTER = Router(
    state=None,  # type: ignore[arg-type]
    routes=[
        Route("GET", "/things/detail", _echo),
        Route("GET", "/things/{thing_id}", _echo),
        Route("DELETE", "/things/{thing_id}", _echo),
        Route("POST", "/things/{thing_id}/action", _echo),
        Route("GET", "/boom", _boom),
    ],
)


def _call(method: str, path: str, **headers: str) -> webob.Response:
    req = webob.Request.blank(path, method=method, headers=headers)
    req.environ[REQUEST_ID_KEY] = "req-1"
    return req.get_response(ROUTER)


def test_literal_paths_win_over_templates() -> None:
    assert _call("GET", "/v2.1/things/detail").json["params"] == {}
    assert _call("GET", "/v2.1/things/42").json["params"] == {"thing_id": "42"}
    assert _call("GET", "/v2.1/things/42/").json["params"] == {"thing_id": "42"}
    assert _call("POST", "/v2.1/things/a-b/action").json["params"] == {"thing_id": "a-b"}


def test_unknown_path_and_wrong_method() -> None:
    assert _call("GET", "/v2.1/things/1/2").status_int == 404
    response = _call("PUT", "/v2.1/things/1")
    assert response.status_int == 405
    assert response.headers["Allow"] == "DELETE, GET"


def test_microversion_reaches_the_handler_and_the_response() -> None:
    response = _call("GET", "/v2.1/things/1", **{"OpenStack-API-Version": "compute 2.47"})
    assert response.json["version"] == "2.47"
    assert response.headers["OpenStack-API-Version"] == "compute 2.47"


def test_a_bug_is_a_500() -> None:
    response = _call("GET", "/v2.1/boom")
    assert response.status_int == 500
    assert "req-1" in response.json["computeFault"]["message"]


@pytest.mark.parametrize(
    ("method", "path", "handler"),
    [
        ("GET", "/flavors/detail", "detail"),
        ("GET", "/flavors/m1", "show"),
        ("GET", "/servers/detail", "detail"),
        ("POST", "/servers/abc/action", "action"),
        ("GET", "/os-migrations", "index"),
    ],
)
def test_the_route_table(method: str, path: str, handler: str) -> None:
    matched = [r for r in ROUTES if r.method == method and r.pattern.match(path)]
    assert matched[0].handler.__name__ == handler


def test_route_table_has_no_duplicates() -> None:
    keys = [(r.method, r.template) for r in api_app.ROUTES]
    assert len(keys) == len(set(keys))
