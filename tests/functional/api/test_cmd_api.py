"""``resize-sched-api`` as a process, and the WSGI entry point, from a config file."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
import webob

from resize_sched.api import wsgi
from tests.functional.fixtures.database import fresh_sqlite_database, sqlite_url

SERVING = re.compile(r"serving the Compute API at (http://127\.0\.0\.1:\d+/v2\.1)")


def _config(
    tmp_path: Path,
    transport_url: str = "fake://",
    connection: str | None = None,
    claim_strategy: str = "max_flavor",
) -> Path:
    db = fresh_sqlite_database(tmp_path)
    db.dispose()
    path = tmp_path / "resize_sched.conf"
    path.write_text(
        f"[DEFAULT]\ntransport_url = {transport_url}\n"
        f"[database]\nconnection = {connection or sqlite_url(tmp_path)}\n"
        f"[resize]\nclaim_strategy = {claim_strategy}\n"
        "[api]\nbind_host = 127.0.0.1\nbind_port = 0\nauth_strategy = noauth2\n"
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
