"""The fault proxy of the Placement fault tests, against a small echo server."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.functional.fixtures.fault_proxy import FaultProxy


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers every request with its method, path and body; counts writes."""

    writes: list[str] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        if self.command != "GET":
            type(self).writes.append(self.path)
        data = json.dumps({"method": self.command, "path": self.path, "body": body}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = _serve


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    _Echo.writes = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}/placement"
    try:
        with FaultProxy(upstream, delay=0.3) as p:
            yield p
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_forwards_and_counts(proxy: FaultProxy) -> None:
    proxy.arm()
    resp = requests.put(proxy.endpoint + "/allocations/c1?x=1", json={"a": 1}, timeout=5)
    assert resp.status_code == 200
    assert resp.json() == {
        "method": "PUT",
        "path": "/placement/allocations/c1?x=1",
        "body": '{"a": 1}',
    }
    assert requests.get(proxy.endpoint + "/", timeout=5).status_code == 200
    assert proxy.count == 2
    assert [(s.number, s.method, s.outcome) for s in proxy.log] == [
        (1, "PUT", "200"),
        (2, "GET", "200"),
    ]
    assert proxy.injected == []


@pytest.mark.parametrize("fault", ["500", "503"])
def test_server_errors_are_not_forwarded(proxy: FaultProxy, fault: str) -> None:
    proxy.arm({2: fault})
    assert requests.get(proxy.endpoint + "/", timeout=5).status_code == 200
    resp = requests.post(proxy.endpoint + "/allocations", json={}, timeout=5)
    assert resp.status_code == int(fault)
    assert resp.json()["errors"][0]["status"] == int(fault)
    assert _Echo.writes == []
    assert requests.post(proxy.endpoint + "/allocations", json={}, timeout=5).status_code == 200
    assert [s.number for s in proxy.injected] == [2]


def test_conflict_has_placements_generation_conflict_shape(proxy: FaultProxy) -> None:
    proxy.arm({1: "409"})
    resp = requests.put(proxy.endpoint + "/allocations/c1", json={}, timeout=5)
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "placement.concurrent_update"
    assert _Echo.writes == []


def test_conflict_planned_at_a_read_is_not_injected(proxy: FaultProxy) -> None:
    proxy.arm({1: "409"})
    assert requests.get(proxy.endpoint + "/", timeout=5).status_code == 200
    assert proxy.injected == []


def test_reset_breaks_the_connection_without_forwarding(proxy: FaultProxy) -> None:
    proxy.arm({1: "reset"})
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.put(proxy.endpoint + "/allocations/c1", json={}, timeout=5)
    assert _Echo.writes == []
    assert proxy.log[0].outcome == "reset"


def test_delay_forwards_then_answers_too_late(proxy: FaultProxy) -> None:
    proxy.arm({1: "delay"})
    with pytest.raises(requests.exceptions.Timeout):
        requests.put(proxy.endpoint + "/allocations/c1", json={}, timeout=0.1)
    # NOTE: the write landed upstream even though the client gave up.
    assert _Echo.writes == ["/placement/allocations/c1"]
    assert requests.get(proxy.endpoint + "/", timeout=5).status_code == 200
    assert proxy.injected[0].outcome == "delay/200"


def test_unknown_fault_is_refused(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError):
        proxy.arm({1: "418"})
