"""``resize-sched-api``: its command line, and how the shared server sets up waitress."""

import resource

import pytest

from resize_sched import conf as rs_conf
from resize_sched.api import middleware, server
from resize_sched.cmd import api


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        api.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "Compute API v2.1 subset" in out
    assert "--config-file" in out


def test_unknown_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        api.main(["--no-such-option"])
    assert caught.value.code == 2


class _Limits:
    """A stand-in for the process's RLIMIT_NOFILE (soft, hard)."""

    def __init__(self, soft: int, hard: int) -> None:
        self.value = (soft, hard)

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.value

    def set(self, which: int, value: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        assert value[0] <= value[1] == self.value[1]
        self.value = value


@pytest.mark.parametrize(
    ("soft", "hard", "soft_after", "limit"),
    [
        (1024, 65536, 2000 + server.RESERVED_FDS, 2000),  # raised to fit
        (65536, 65536, 65536, 2000),  # already enough
        (1024, 1024, 1024, 1024 - server.RESERVED_FDS),  # cut to fit, with a warning
    ],
)
def test_the_open_file_limit_is_raised_to_fit_the_connections(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    soft: int,
    hard: int,
    soft_after: int,
    limit: int,
) -> None:
    limits = _Limits(soft, hard)
    monkeypatch.setattr(resource, "getrlimit", limits.get)
    monkeypatch.setattr(resource, "setrlimit", limits.set)
    assert server.connection_limit(2000) == limit
    assert limits.value == (soft_after, hard)
    warned = [r for r in caplog.records if "does not fit the open-file limit" in r.getMessage()]
    assert len(warned) == (1 if limit < 2000 else 0)


def test_the_server_polls_and_applies_the_wsgi_options() -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("bind_host", "127.0.0.1", group="api")
    conf.set_override("bind_port", 0, group="api")
    conf.set_override("connection_limit", 1500, group="wsgi")
    conf.set_override("client_socket_timeout", 45, group="wsgi")
    conf.set_override("request_read_timeout", 12, group="wsgi")
    http = server.create_server(conf, lambda environ, start_response: [], ident="test")
    try:
        adj = http.adj
        assert adj.asyncore_use_poll is True
        assert (adj.connection_limit, adj.channel_timeout, adj.cleanup_interval) == (1500, 45, 4)
        assert http.channel_class is server.ReadTimedChannel
    finally:
        http.close()


def test_requests_waitress_refuses_are_answered_as_the_api_answers() -> None:
    """A malformed request or a body over the limit never reaches the API: the
    server itself answers with a Compute-style JSON error and a request id."""
    import json
    import socket
    import threading

    from waitress import wasyncore

    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("bind_host", "127.0.0.1", group="api")
    conf.set_override("bind_port", 0, group="api")
    middleware.max_body_size(conf)  # registers the option
    conf.set_override("max_request_body_size", 1000, group="oslo_middleware")
    reached: list[str] = []

    def app(environ: dict, start_response: object) -> list[bytes]:
        reached.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Length", "0")])  # type: ignore[operator]
        return []

    http = server.create_server(conf, app, ident="test")
    stopping = threading.Event()

    def loop() -> None:
        while not stopping.is_set():
            wasyncore.loop(timeout=0.05, map=http._map, count=1)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()

    def ask(raw: bytes) -> tuple[str, dict[str, str], dict]:
        with socket.create_connection(("127.0.0.1", http.effective_port), timeout=10) as sock:
            sock.sendall(raw)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status, *lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        return status, headers, json.loads(body)

    try:
        status, headers, body = ask(
            b"POST /v2.1/servers HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n"
        )
        assert status.split()[1] == "413"
        assert body["overLimit"]["message"] == (
            "Request is too large (over max_request_body_size, 1000 bytes)."
        )
        assert headers["x-openstack-request-id"].startswith("req-")
        status, headers, body = ask(b"GET /v2.1 HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n")
        assert status.split()[1] == "400"
        assert body["badRequest"]["code"] == 400
        assert headers["x-compute-request-id"] == headers["x-openstack-request-id"]
        assert reached == []
    finally:
        stopping.set()
        thread.join(timeout=10)
        http.close()
