"""The oslo.middleware filters, through the real application."""

import io
import json
import logging
import pathlib
import re
from typing import Any

import pytest
import webob
from oslo_middleware.healthcheck import opts as healthcheck_opts

from resize_sched.api.app import build_app
from tests.functional.api.harness import ALICE, ApiHarness

REQUEST_ID = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _rebuild(api: ApiHarness) -> None:
    """Build the application again: some filters read their options once, at start."""
    api.app = build_app(api.conf, api.db, api.conductor)


@pytest.mark.parametrize(
    ("method", "path", "token", "status"),
    [
        ("GET", "/", "admin:admin", 200),
        ("GET", "/v2.1", "admin:admin", 200),
        ("GET", "/v2.1/flavors", "admin:admin", 200),
        ("GET", "/v2.1/flavors", None, 401),
        ("GET", "/v2.1/nothing", "admin:admin", 404),
        ("GET", "/v2.1/servers/%FF", "admin:admin", 400),
        ("POST", "/", "admin:admin", 405),
        ("GET", "/healthcheck", None, 200),
        ("GET", "/elsewhere", None, 404),
    ],
)
def test_every_response_carries_the_logged_request_id(
    api: ApiHarness,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    token: str | None,
    status: int,
) -> None:
    with caplog.at_level(logging.INFO, logger="resize_sched.api.app"):
        response = api.request(method, path, token=token)
    assert response.status_int == status
    request_id = response.headers["x-openstack-request-id"]
    assert REQUEST_ID.match(request_id)
    assert response.headers["x-compute-request-id"] == request_id
    logged = [r.getMessage() for r in caplog.records if r.name == "resize_sched.api.app"]
    assert any(request_id in line and str(status) in line for line in logged), logged


def test_each_request_gets_its_own_id_and_the_context_carries_it(api: ApiHarness) -> None:
    api.flavor("small")
    first = api.request("GET", "/v2.1/flavors").headers["x-openstack-request-id"]
    response = api.request(
        "POST", "/v2.1/servers", {"server": {"name": "web", "flavorRef": "small"}}, token=ALICE
    )
    assert response.status_int == 202
    request_id = response.headers["x-openstack-request-id"]
    assert request_id != first
    assert api.next_cast().context.request_id == request_id


def test_a_body_over_the_limit_is_refused_with_413(api: ApiHarness) -> None:
    api.conf.set_override("max_request_body_size", 1024, group="oslo_middleware")
    before = api.snapshot()
    flavor = {"flavor": {"name": "big", "ram": 1, "vcpus": 1, "disk": 0, "id": "x" * 2000}}
    response = api.request("POST", "/v2.1/flavors", flavor)
    assert response.status_int == 413
    assert response.json["overLimit"]["code"] == 413
    assert "x-openstack-request-id" in response.headers
    assert api.snapshot() == before
    api.assert_no_cast()


def test_the_default_limit_is_novas(api: ApiHarness) -> None:
    before = api.snapshot()
    response = api.request("POST", "/v2.1/flavors", raw=b" " * (114688 + 1))
    assert response.status_int == 413
    assert api.snapshot() == before


def test_a_chunked_body_over_the_limit_is_refused_with_413(api: ApiHarness) -> None:
    api.conf.set_override("max_request_body_size", 1024, group="oslo_middleware")
    before = api.snapshot()
    req = webob.Request.blank("/v2.1/flavors", method="POST")
    req.headers["X-Auth-Token"] = "admin:admin"
    req.content_type = "application/json"
    req.environ["wsgi.input"] = io.BytesIO(b" " * 4096)
    req.environ.pop("CONTENT_LENGTH", None)
    req.environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    req.environ["wsgi.input_terminated"] = True
    response = req.get_response(api.app)
    assert response.status_int == 413, response.body
    assert response.json["overLimit"]["code"] == 413
    assert api.snapshot() == before


class _Unreadable(io.RawIOBase):
    """A request body that fails the test if anything reads it."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise AssertionError("the body was read")


def test_an_announced_body_over_the_limit_is_refused_before_auth_and_unread(
    keystone_api: ApiHarness,
) -> None:
    # NOTE: keystone_api's auth_token knows no Keystone at all: reaching it
    # would answer 401 (no token) or fail, never 413.
    req = webob.Request.blank("/v2.1/servers", method="POST")
    req.content_type = "application/json"
    req.environ["wsgi.input"] = _Unreadable()
    req.environ["CONTENT_LENGTH"] = "300000000"
    response = req.get_response(keystone_api.app)
    assert response.status_int == 413
    assert response.json["overLimit"]["code"] == 413
    assert response.headers["x-openstack-request-id"].startswith("req-")


def test_healthcheck_answers_200(api: ApiHarness) -> None:
    response = api.request("GET", "/healthcheck", token=None)
    assert response.status_int == 200
    response = api.request("HEAD", "/healthcheck", token=None)
    assert response.status_int in (200, 204)


def test_healthcheck_answers_503_when_disabled_by_file(
    api: ApiHarness, tmp_path: pathlib.Path
) -> None:
    marker = tmp_path / "disabled"
    # NOTE: the backend registers its option when loaded; set it before that.
    api.conf.register_opts(healthcheck_opts.DISABLE_BY_FILE_OPTS, group="healthcheck")
    api.conf.set_override("backends", ["disable_by_file"], group="healthcheck")
    api.conf.set_override("disable_by_file_path", str(marker), group="healthcheck")
    _rebuild(api)
    assert api.request("GET", "/healthcheck", token=None).status_int == 200
    marker.touch()
    response = api.request("GET", "/healthcheck", token=None)
    assert response.status_int == 503
    assert "x-openstack-request-id" in response.headers
    marker.unlink()
    assert api.request("GET", "/healthcheck", token=None).status_int == 200


def test_healthcheck_details_are_for_administrators_only(api: ApiHarness) -> None:
    api.conf.set_override("detailed", True, group="healthcheck")
    _rebuild(api)
    accept = {"Accept": "application/json"}
    admin = api.request("GET", "/healthcheck", headers=accept)
    assert admin.status_int == 200 and admin.json["detailed"] is True
    for token in (None, ALICE):
        plain = api.request("GET", "/healthcheck", token=token, headers=accept)
        assert plain.status_int == 200 and plain.json["detailed"] is False


def test_healthcheck_is_never_detailed_unless_configured(api: ApiHarness) -> None:
    response = api.request("GET", "/healthcheck", headers={"Accept": "application/json"})
    assert response.json["detailed"] is False


def test_forwarded_proto_changes_the_links_when_enabled(api: ApiHarness) -> None:
    api.flavor("small")
    forwarded = {"X-Forwarded-Proto": "https", "Host": "compute.example"}

    def self_link() -> str:
        body = api.request("GET", "/v2.1/flavors", headers=forwarded).json
        return body["flavors"][0]["links"][0]["href"]

    assert self_link() == "http://compute.example/v2.1/flavors/small"
    api.conf.set_override("enable_proxy_headers_parsing", True, group="oslo_middleware")
    assert self_link() == "https://compute.example/v2.1/flavors/small"
    versions = api.request("GET", "/", headers=forwarded).json
    assert "https://compute.example/v2.1/" in json.dumps(versions)


def test_cors_allows_the_configured_origin(api: ApiHarness) -> None:
    api.conf.set_override("allowed_origin", ["https://dashboard.example"], group="cors")
    _rebuild(api)
    origin = {"Origin": "https://dashboard.example"}
    response = api.request("GET", "/v2.1/flavors", headers=origin)
    assert response.headers["Access-Control-Allow-Origin"] == "https://dashboard.example"
    other = api.request("GET", "/v2.1/flavors", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
