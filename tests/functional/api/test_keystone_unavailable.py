"""A Keystone that hangs or is down: a JSON 503 with the request id, in bounded time.

Keystone here is a loopback socket: one that accepts connections and never
answers (hangs), or a port nobody listens on (down). keystonemiddleware's
``auth_token`` is the real one, configured as the operator guide says (a
service user, ``auth_url``) with a short ``http_connect_timeout``.
"""

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import webob

from resize_sched import conf as rs_conf
from resize_sched.api import keystone
from resize_sched.api.app import build_app
from tests.functional.api.harness import ApiHarness


class HangingKeystone:
    """A loopback socket that accepts every connection and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture
def hanging() -> Iterator[HangingKeystone]:
    keystone_ = HangingKeystone()
    yield keystone_
    keystone_.close()


def _down_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _app(api: ApiHarness, tmp_path: Path, port: int) -> object:
    config = tmp_path / "resize_sched.conf"
    config.write_text(
        "[keystone_authtoken]\n"
        f"www_authenticate_uri = http://127.0.0.1:{port}/v3\n"
        f"auth_url = http://127.0.0.1:{port}/v3\n"
        "auth_type = password\nusername = resize_sched\npassword = SECRET\n"
        "user_domain_name = Default\nproject_name = service\nproject_domain_name = Default\n"
        "http_connect_timeout = 1\nhttp_request_max_retries = 0\n"
    )
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(config)], default_config_files=[])
    return build_app(conf, api.db, api.conductor)


def _assert_json_503(response: webob.Response) -> None:
    assert response.status_int == 503, response.body
    assert response.content_type == "application/json"
    request_id = response.headers["x-openstack-request-id"]
    assert request_id.startswith("req-")
    fault = response.json["serviceUnavailable"]
    assert fault["code"] == 503
    assert "Keystone" in fault["message"]
    assert request_id in fault["message"]


def test_a_hanging_keystone_is_a_json_503_with_the_request_id(
    api: ApiHarness, tmp_path: Path, hanging: HangingKeystone
) -> None:
    app = _app(api, tmp_path, hanging.port)
    before = api.snapshot()
    req = webob.Request.blank(
        "/v2.1/servers",
        method="POST",
        headers={"X-Auth-Token": "a-random-token", "Content-Type": "application/json"},
        body=b'{"server": {"name": "web", "flavorRef": "small"}}',
    )
    _assert_json_503(req.get_response(app))
    assert hanging.accepted  # it was asked, and did not answer
    assert api.snapshot() == before
    api.assert_no_cast()


def test_a_keystone_that_is_down_is_the_same_json_503(api: ApiHarness, tmp_path: Path) -> None:
    app = _app(api, tmp_path, _down_port())
    req = webob.Request.blank("/v2.1/servers", headers={"X-Auth-Token": "a-random-token"})
    _assert_json_503(req.get_response(app))


def test_the_wait_for_keystone_is_bounded_by_default(api: ApiHarness) -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    build_app(conf, api.db, api.conductor)
    group = conf.keystone_authtoken
    assert (group.http_connect_timeout, group.http_request_max_retries) == (
        keystone.DEFAULTS["http_connect_timeout"],
        keystone.DEFAULTS["http_request_max_retries"],
    )
    assert group.http_connect_timeout is not None


def test_while_keystone_hangs_one_request_at_a_time_waits_for_it(
    api: ApiHarness, tmp_path: Path, hanging: HangingKeystone
) -> None:
    """The others are refused at once: random tokens cannot hold every worker thread."""
    app = _app(api, tmp_path, hanging.port)

    def ask(token: str) -> webob.Response:
        return webob.Request.blank("/v2.1/servers", headers={"X-Auth-Token": token}).get_response(
            app
        )

    _assert_json_503(ask("first"))
    asked = len(hanging.accepted)
    assert asked >= 1
    for n in range(5):
        _assert_json_503(ask(f"random-{n}"))
    assert len(hanging.accepted) == asked  # none of them reached Keystone
    # After http_connect_timeout (1 s here), one request asks again.
    time.sleep(1.2)
    _assert_json_503(ask("probe"))
    assert len(hanging.accepted) > asked
