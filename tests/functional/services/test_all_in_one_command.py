"""``resize-sched-all-in-one`` as a process: its server is resize-sched-api's,
it stops cleanly on Ctrl-C, and a taken port is one line naming its option."""

import os
import pathlib
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.functional.fixtures import raw_http

ROOT = pathlib.Path(__file__).resolve().parents[3]
PROG = "resize-sched-all-in-one"

#: Slow clients the all-in-one must hold while it answers a probe (issue 28:
#: with a bare waitress server, 300 stopped it).
SLOW_CLIENTS = 300


@dataclass
class Run:
    """A running all-in-one: its process, stdout lines, and banner."""

    proc: subprocess.Popen
    lines: "queue.Queue[str | None]"
    banner: list[str]

    @property
    def api(self) -> str:
        return next(line.split()[2] for line in self.banner if line.startswith("Compute API:"))

    @property
    def address(self) -> tuple[str, int]:
        split = urllib.parse.urlsplit(self.api)
        assert split.hostname is not None and split.port is not None
        return split.hostname, split.port

    def rest(self) -> list[str]:
        """Every stdout line after the banner, once the process has exited."""
        out = []
        while (line := self.lines.get(timeout=10)) is not None:
            out.append(line)
        return out


def _config(tmp_path: pathlib.Path, extra: str = "") -> pathlib.Path:
    config = tmp_path / "aio.conf"
    config.write_text(
        "[api]\nbind_port = 0\n[all_in_one]\nplacement_port = 0\nhosts = host1:4:4096:40\n" + extra
    )
    return config


def _popen(config: pathlib.Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    return subprocess.Popen(
        [sys.executable, "-m", "resize_sched.cmd.all_in_one", "--config-file", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _start(config: pathlib.Path) -> Run:
    proc = _popen(config)
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    banner: list[str] = []
    deadline = time.monotonic() + 120
    while not banner or not banner[-1].startswith("Log:"):
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line is None:
            proc.wait(timeout=30)
            stderr = proc.stderr.read() if proc.stderr else ""
            pytest.fail(f"the all-in-one exited:\n{''.join(banner)}{stderr}")
        banner.append(line)
    return Run(proc, lines, banner)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _stop(run: Run) -> None:
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGTERM)
        try:
            run.proc.wait(timeout=60)
        finally:
            _kill(run.proc)


@pytest.fixture
def running(tmp_path: pathlib.Path) -> Iterator[Run]:
    """A default run (no state_path: a temporary directory), stopped by the test or here."""
    run = _start(_config(tmp_path))
    try:
        yield run
    finally:
        _stop(run)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A default run shared by the tests that only send it requests."""
    run = _start(_config(tmp_path_factory.mktemp("aio")))
    try:
        yield run
    finally:
        _stop(run)


def test_a_default_run_stops_cleanly_on_ctrl_c(running: Run) -> None:
    log_line = running.banner[-1]
    log_file = pathlib.Path(log_line.split(None, 1)[1].strip())
    state = log_file.parent
    assert state.is_dir()
    assert raw_http.probe(f"{running.api}/flavors", "admin:admin") == {"flavors": []}
    running.proc.send_signal(signal.SIGINT)
    code = running.proc.wait(timeout=60)
    stderr = running.proc.stderr.read() if running.proc.stderr else ""
    assert "Traceback" not in stderr
    assert "Error" not in stderr
    assert code == 0
    assert running.rest() == [
        f"{PROG} stopped on SIGINT; its temporary state directory {state} is removed.\n"
    ]
    assert not state.exists()


def _taken_port() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.parametrize(
    ("group", "option", "named"),
    [
        ("api", "bind_port", "[api] bind_host, bind_port"),
        ("all_in_one", "placement_port", "[all_in_one] placement_port"),
    ],
)
def test_a_taken_port_is_one_line_naming_the_option(
    tmp_path: pathlib.Path, group: str, option: str, named: str
) -> None:
    with _taken_port() as taken:
        port = taken.getsockname()[1]
        config = _config(tmp_path)
        text = config.read_text().replace(f"{option} = 0", f"{option} = {port}")
        config.write_text(text)
        assert f"[{group}]" in text and f"{option} = {port}" in text
        proc = _popen(config)
        try:
            out, err = proc.communicate(timeout=120)
        finally:
            _kill(proc)
    assert proc.returncode == 1
    assert err.splitlines() == [
        f"{PROG}: cannot listen on 127.0.0.1:{port} ({named}): the port is already in use "
        "(another process listens there)"
    ]
    assert out == ""


def test_three_hundred_slow_clients_do_not_stop_it(served: Run) -> None:
    host, port = served.address
    with raw_http.slow_clients(host, port, SLOW_CLIENTS) as slow:
        # NOTE: connections are accepted in order, so the probe's answer means
        # every slow client before it was accepted and is held.
        assert raw_http.probe(f"{served.api}/flavors", "admin:admin", timeout=30) == {
            "flavors": []
        }
        assert sum(raw_http.still_open(sock) for sock in slow) == SLOW_CLIENTS


def test_an_announced_huge_body_without_a_token_is_refused_unread(served: Run) -> None:
    host, port = served.address
    for path in ("/v2.1/servers", "/identity/v3/auth/tokens", "/image/v2/images"):
        answer = raw_http.announce_body(host, port, path)
        assert answer.status == 413, answer
        assert answer.json()["overLimit"]["code"] == 413
        assert answer.headers["x-openstack-request-id"].startswith("req-")
    chunked = raw_http.chunked_past(host, port, "/v2.1/servers", 200 * 1024)
    assert chunked.status == 413
    assert chunked.headers["x-openstack-request-id"].startswith("req-")
    assert raw_http.probe(f"{served.api}/flavors", "admin:admin") == {"flavors": []}
