"""``resize-sched-api`` as a process, and the WSGI entry point, from a config file."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import webob

from resize_sched.api import wsgi
from tests.functional.fixtures import raw_http
from tests.functional.fixtures.database import fresh_sqlite_database, sqlite_url

SERVING = re.compile(r"serving the Compute API at (http://127\.0\.0\.1:\d+/v2\.1)")


def _config(
    tmp_path: Path,
    transport_url: str = "fake://",
    connection: str | None = None,
    claim_strategy: str = "max_flavor",
    extra: str = "",
) -> Path:
    db = fresh_sqlite_database(tmp_path)
    db.dispose()
    path = tmp_path / "resize_sched.conf"
    path.write_text(
        f"[DEFAULT]\ntransport_url = {transport_url}\n"
        f"[database]\nconnection = {connection or sqlite_url(tmp_path)}\n"
        f"[resize]\nclaim_strategy = {claim_strategy}\n"
        "[api]\nbind_host = 127.0.0.1\nbind_port = 0\nauth_strategy = noauth2\n" + extra
    )
    return path


class _Output:
    """Collects a process's output in a thread; waits for a pattern."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, pattern: re.Pattern[str], timeout: float = 30) -> re.Match[str]:
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(pattern.search(line) for line in self.lines), timeout=timeout
            )
            assert found, "".join(self.lines)
            return next(m for line in self.lines if (m := pattern.search(line)))


def _start(config: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "resize_sched.cmd.api", "--config-file", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_serves_and_stops_cleanly(tmp_path: Path, stop_signal: signal.Signals) -> None:
    process = _start(_config(tmp_path))
    output = _Output(process)
    try:
        endpoint = output.wait_for(SERVING).group(1)
        with urllib.request.urlopen(endpoint, timeout=10) as response:
            assert json.load(response)["version"]["id"] == "v2.1"
        request = urllib.request.Request(
            f"{endpoint}/flavors", headers={"X-Auth-Token": "alice:project-a"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response) == {"flavors": []}
        process.send_signal(stop_signal)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output.wait_for(re.compile(r"resize-sched-api stopped"))


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"claim_strategy": "nope"}, r"Claim strategy 'nope' is not installed"),
        ({"transport_url": "nope://"}, r"resize-sched-api: .*nope"),
        ({"connection": "not a url"}, r"resize-sched-api: Could not parse SQLAlchemy URL"),
    ],
)
def test_bad_configuration_fails_at_start(
    tmp_path: Path, option: dict[str, str], message: str
) -> None:
    process = _start(_config(tmp_path, **option))
    output = _Output(process)
    try:
        assert process.wait(timeout=30) == 1
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output.wait_for(re.compile(message))


def test_wsgi_application_reads_the_config_file_named_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(wsgi.CONFIG_ENV, str(_config(tmp_path)))
    application = wsgi.LazyApplication()
    try:
        response = webob.Request.blank(
            "/v2.1/flavors", headers={"X-Auth-Token": "alice:project-a"}
        ).get_response(application)
        assert response.status_int == 200
        assert response.json == {"flavors": []}
        assert application.deployment.db.url == sqlite_url(tmp_path)
    finally:
        application.deployment.close()


#: Slow clients the API must hold while it answers others (issue: 110 stopped it).
SLOW_CLIENTS = 1000


def _serving(tmp_path: Path, extra: str = "") -> tuple[subprocess.Popen, _Output, str]:
    process = _start(_config(tmp_path, extra=extra))
    output = _Output(process)
    return process, output, output.wait_for(SERVING).group(1)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _closed_by_server(sock: socket.socket, deadline: float, trickle: bool) -> bool:
    """Whether the server closes ``sock`` before ``deadline`` (sending a byte
    every 0.2 s while waiting when ``trickle``)."""
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            if trickle:
                sock.sendall(b"a")
            if sock.recv(1024) == b"":
                return True
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def test_a_thousand_slow_clients_do_not_stop_the_api(tmp_path: Path) -> None:
    process, _output, endpoint = _serving(tmp_path)
    address = urllib.parse.urlsplit(endpoint)
    slow: list[socket.socket] = []
    try:
        for _ in range(SLOW_CLIENTS):
            sock = socket.create_connection((address.hostname, address.port), timeout=10)
            # Headers begun, never finished: each holds a connection.
            sock.sendall(b"GET /v2.1/servers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: alice")
            slow.append(sock)
        started = time.monotonic()
        request = urllib.request.Request(
            f"{endpoint}/flavors", headers={"X-Auth-Token": "alice:project-a"}
        )
        # NOTE: connections are accepted in order, so the probe's answer means
        # every slow client before it was accepted and is held.
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.load(response) == {"flavors": []}
        print(
            f"probe answered in {time.monotonic() - started:.3f} s beside {len(slow)} slow clients"
        )
        for sock in slow:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)  # still open, nothing answered yet
    finally:
        for sock in slow:
            sock.close()
        _stop(process)


def test_idle_and_trickling_clients_are_closed(tmp_path: Path) -> None:
    extra = "[wsgi]\nclient_socket_timeout = 2\nrequest_read_timeout = 2\n"
    process, output, endpoint = _serving(tmp_path, extra)
    address = urllib.parse.urlsplit(endpoint)
    try:
        idle = socket.create_connection((address.hostname, address.port), timeout=10)
        trickler = socket.create_connection((address.hostname, address.port), timeout=10)
        trickler.sendall(b"GET /v2.1 HTTP/1.1\r\nX-Slow: ")
        deadline = time.monotonic() + 30
        assert _closed_by_server(trickler, deadline, trickle=True)
        assert _closed_by_server(idle, deadline, trickle=False)
        output.wait_for(re.compile(r"Closed 1 connection\(s\) whose request took over 2 s"))
        # A client that sends its request at once is answered as ever.
        with urllib.request.urlopen(endpoint, timeout=10) as response:
            assert json.load(response)["version"]["id"] == "v2.1"
    finally:
        _stop(process)


def test_an_announced_huge_body_without_a_token_is_refused_unread(tmp_path: Path) -> None:
    process, _output, endpoint = _serving(tmp_path)
    address = urllib.parse.urlsplit(endpoint)
    host, port = str(address.hostname), int(address.port or 0)
    try:
        answer = raw_http.announce_body(host, port, "/v2.1/servers")
        assert answer.status == 413
        assert answer.json() == {
            "overLimit": {
                "code": 413,
                "message": "Request is too large (over max_request_body_size, 114688 bytes).",
            }
        }
        assert answer.headers["x-openstack-request-id"].startswith("req-")
        assert answer.headers["x-compute-request-id"] == answer.headers["x-openstack-request-id"]
        chunked = raw_http.chunked_past(host, port, "/v2.1/servers", 200 * 1024)
        assert chunked.status == 413
        # A body of the limit exactly still reaches the API (and its token check).
        assert raw_http.announce_body(host, port, "/v2.1/servers", 114688, send=True).status == 401
    finally:
        _stop(process)


def test_a_taken_port_is_one_line_naming_the_options(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = _config(tmp_path)
        config.write_text(config.read_text().replace("bind_port = 0", f"bind_port = {port}"))
        process = subprocess.run(
            [sys.executable, "-m", "resize_sched.cmd.api", "--config-file", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
    assert process.returncode == 1
    assert process.stderr.splitlines() == [
        f"resize-sched-api: cannot listen on 127.0.0.1:{port} ([api] bind_host, bind_port): "
        "the port is already in use (another process listens there)"
    ]
