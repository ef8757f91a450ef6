"""A real Placement in its own process, for the benchmark's production shape.

:class:`ExternalPlacement` runs openstack-placement the way a deployment does:
its own WSGI application (``placement.wsgi.init_application``, reading
``placement.conf`` from ``OS_PLACEMENT_CONFIG_DIR``) in worker processes
that share one listening socket (as uWSGI or mod_wsgi run it, one per core
by default), each serving with a pool of threads under waitress, on a scratch database on a
MariaDB/MySQL or PostgreSQL server (or a SQLite file). Unlike the embedded
fixtures in :mod:`resize_sched.placement.embedded`, requests are not
serialised: concurrent clients really race in Placement and its database.

:class:`ScratchDatabase` creates (and later drops) a uniquely named database
``rs_bench_<hex>`` on a server; the benchmark uses it for resize_sched's own
database too.

Run as a script, this module is the server process itself (see
:func:`serve_main`); nobody needs to start it by hand.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resize_sched.db import engines, scratch
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.embedded import PlacementEndpoint

#: Prefix of every scratch database and file this module creates.
SCRATCH_PREFIX = "rs_bench_"


# ``placement.cmd.manage`` has no ``if __name__ == "__main__"`` block, so
# ``python -m placement.cmd.manage`` imports it and exits without doing
# anything; call its console-script entry point instead.
_MANAGE = "import sys; from placement.cmd import manage; sys.exit(manage.main())"

# One oslo.log line: "<date> <time> <pid> <LEVEL> <logger> [<context>] <message>".
_LOG_LINE = re.compile(
    r"^\S+ \S+ \d+ (?P<level>[A-Z]+) (?P<logger>\S+) (?:\[(?P<context>[^\]]*)\] )?(?P<msg>.*)$"
)
_REQUEST_ID = re.compile(r"req-[0-9a-f-]+")
#: What Placement logs when it accepts an allocation write on a provider whose
#: usage, as it counted it, was already over capacity (once per class).
OVER_CAPACITY_ACCEPTED = "reduces existing overage"
_STATUS = re.compile(r'"(?P<method>[A-Z]+) [^"]*" status: (?P<status>\d{3})')


def placement_url(url: str) -> str:
    """``url`` with a driver Placement works with.

    Placement reads ``cursor.lastrowid`` after inserting an allocation, which
    psycopg 3 cursors lack (every allocation write answers 500), so on
    PostgreSQL it needs psycopg2.

    :raises RuntimeError: a PostgreSQL URL and psycopg2 is not installed.
    """
    parsed = engines.normalize_url(url)
    if parsed.get_backend_name() != "postgresql" or parsed.get_driver_name() == "psycopg2":
        return parsed.render_as_string(hide_password=False)
    if importlib.util.find_spec("psycopg2") is None:
        raise RuntimeError(
            "Placement on PostgreSQL needs psycopg2 (it uses cursor.lastrowid, which "
            "psycopg 3 does not have): pip install psycopg2-binary"
        )
    return parsed.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)


def backend_of(url: str) -> str:
    """``mysql``, ``mariadb``, ``postgresql`` or ``sqlite``, from a SQLAlchemy URL."""
    return engines.normalize_url(url).get_backend_name()


class ScratchDatabase(scratch.ScratchDatabase):
    """A ``rs_bench_<hex>`` database (or SQLite file), dropped when done."""

    def __init__(self, server_url: str, directory: str | None = None) -> None:
        super().__init__(server_url, prefix=SCRATCH_PREFIX, directory=directory)


@dataclass
class LogSummary:
    """What an :class:`ExternalPlacement` logged over a stretch of time."""

    #: answers by ``METHOD status``, e.g. ``POST 409``
    answers: collections.Counter[str] = field(default_factory=collections.Counter)
    #: warnings and errors by ``LEVEL logger: message``
    problems: collections.Counter[str] = field(default_factory=collections.Counter)
    #: requests whose allocation write Placement let through over capacity
    over_capacity_accepted: int = 0


def _conf_value(value: str) -> str:
    # NOTE: oslo.config substitutes ``$name``; a literal dollar is ``$$``.
    return value.replace("$", "$$")


def _tail(path: str, lines: int = 40) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


class ExternalPlacement(PlacementEndpoint):
    """openstack-placement served by waitress in a child process.

    Use as a context manager (or :meth:`start` / :meth:`stop`). On start: a
    scratch database, ``placement.conf`` in a temporary directory (noauth2),
    ``placement-manage db sync``, then the server, awaited until ``GET /``
    answers 200. On stop: the process is terminated and the database dropped.

    :param connection_url: SQLAlchemy URL of a MariaDB/MySQL or PostgreSQL
        server (the scratch database is made there), or any ``sqlite`` URL (a
        file in the temporary directory).
    :param threads: waitress threads per process (and Placement's DB pool size).
    :param processes: worker processes (default: one per core). One process
        runs one request's Python at a time, however many threads it has.
    :param host: the address to listen on; the port is a free one.
    :param startup_timeout: seconds to wait for schema sync and for the server.
    :param options: further ``placement.conf`` settings, group -> option -> value
        (e.g. ``{"placement": {"allocation_conflict_retry_count": 1}}``).
    """

    def __init__(
        self,
        connection_url: str,
        threads: int = 8,
        processes: int | None = None,
        host: str = "127.0.0.1",
        startup_timeout: float = 120.0,
        options: Mapping[str, Mapping[str, object]] | None = None,
    ) -> None:
        self.connection_url = connection_url
        self.threads = threads
        self.processes = processes or os.cpu_count() or 1
        self.host = host
        self.startup_timeout = startup_timeout
        self.options = {group: dict(values) for group, values in (options or {}).items()}
        self.backend = backend_of(connection_url)
        self.endpoint = ""
        self.port = 0
        self.setup_ms = 0.0
        self.tmpdir = ""
        self.log_path = ""
        self.database: ScratchDatabase | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._client: PlacementClient | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> ExternalPlacement:
        """Create the database, sync the schema, start the server and wait for it.

        :raises RuntimeError: the sync or the server failed; the message ends
            with the tail of the log.
        """
        started = time.perf_counter()
        placement_url(self.connection_url)  # fail before creating anything
        self.tmpdir = tempfile.mkdtemp(prefix="rs-bench-placement-")
        self.log_path = os.path.join(self.tmpdir, "placement.log")
        try:
            self.database = ScratchDatabase(self.connection_url, self.tmpdir)
            url = placement_url(self.database.create())
            conf_path = self._write_conf(url)
            self._log = open(self.log_path, "ab")  # closed in stop()
            self._sync(conf_path)
            self._spawn()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.setup_ms = (time.perf_counter() - started) * 1000
        return self

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL) and drop the database."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            # NOTE: the server leads its own process group: its workers go too.
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.database is not None:
            self.database.drop()
            self.database = None
        if self.tmpdir:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            self.tmpdir = ""

    def __enter__(self) -> ExternalPlacement:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def describe(self) -> str:
        """A short label, e.g. ``external on mysql, 2 processes x 8 threads``."""
        return f"external on {self.backend}, {self.processes} processes x {self.threads} threads"

    def _write_conf(self, url: str) -> str:
        path = os.path.join(self.tmpdir, "placement.conf")
        pool = max(self.threads, 5)
        groups: dict[str, dict[str, object]] = {
            "DEFAULT": {"debug": False},
            "api": {"auth_strategy": "noauth2"},
            "placement_database": {
                "connection": url,
                "max_pool_size": pool,
                "max_overflow": pool,
            },
        }
        for group, values in self.options.items():
            groups.setdefault(group, {}).update(values)
        lines = []
        for group, values in groups.items():
            lines.append(f"[{group}]")
            lines += [f"{name} = {_conf_value(str(value))}" for name, value in values.items()]
            lines.append("")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return path

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["OS_PLACEMENT_CONFIG_DIR"] = self.tmpdir
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    def _failure(self, what: str) -> RuntimeError:
        return RuntimeError(f"{what}; last lines of {self.log_path}:\n{_tail(self.log_path)}")

    def _sync(self, conf_path: str) -> None:
        command = [sys.executable, "-c", _MANAGE, "--config-file", conf_path, "db", "sync"]
        try:
            result = subprocess.run(
                command,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self._child_env(),
                timeout=self.startup_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise self._failure(
                f"placement db sync took over {self.startup_timeout:.0f}s"
            ) from None
        if result.returncode != 0:
            raise self._failure(f"placement db sync exited with {result.returncode}")

    def _spawn(self) -> None:
        port_file = os.path.join(self.tmpdir, "port")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--host",
            self.host,
            "--threads",
            str(self.threads),
            "--processes",
            str(self.processes),
            "--port-file",
            port_file,
        ]
        self._proc = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self._child_env(),
            start_new_session=True,
        )

    def _wait_ready(self) -> None:
        assert self._proc is not None
        port_file = os.path.join(self.tmpdir, "port")
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            code = self._proc.poll()
            if code is not None:
                raise self._failure(f"the Placement server exited with {code} while starting")
            if not self.port and os.path.exists(port_file):
                with open(port_file, encoding="ascii") as f:
                    self.port = int(f.read().strip())
                self.endpoint = f"http://{self.host}:{self.port}"
            if self.port:
                try:
                    with urllib.request.urlopen(self.endpoint + "/", timeout=5) as resp:
                        if resp.status == 200:
                            return
                except (urllib.error.URLError, OSError):
                    pass
            time.sleep(0.1)
        raise self._failure(f"Placement did not answer GET / within {self.startup_timeout:.0f}s")

    # -- what the server logged ---------------------------------------------------------

    def log_offset(self) -> int:
        """The log's current size: pass it to :meth:`log_summary` to skip what came before."""
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_summary(self, since: int = 0) -> LogSummary:
        """Count what the server logged after byte ``since``."""
        summary = LogSummary()
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                text = f.read().decode("utf-8", errors="replace")
        except OSError:
            return summary
        answers, problems = summary.answers, summary.problems
        over: set[str] = set()
        for line in text.splitlines():
            match = _LOG_LINE.match(line)
            if match is None:
                continue
            if match["logger"] == "placement.requestlog":
                status = _STATUS.search(match["msg"])
                if status:
                    answers[f"{status['method']} {status['status']}"] += 1
            elif match["level"] in ("WARNING", "ERROR", "CRITICAL"):
                problems[f"{match['level']} {match['logger']}: {match['msg'][:200]}"] += 1
                if OVER_CAPACITY_ACCEPTED in match["msg"]:
                    request = _REQUEST_ID.search(match["context"] or "")
                    over.add(request.group() if request else line)
        summary.over_capacity_accepted = len(over)
        return summary


# -- the server process ----------------------------------------------------------------


def serve_main(argv: list[str] | None = None) -> int:
    """Serve Placement's WSGI app until SIGTERM, in ``--processes`` workers.

    Reads ``placement.conf`` from ``OS_PLACEMENT_CONFIG_DIR`` (as Placement's
    own WSGI entry point does), binds a free port, forks the other workers
    (before any of them loads Placement, so none shares a database
    connection) and writes the port to ``--port-file`` (atomically): the
    socket already listens, so a request waits for the first worker ready.
    SIGTERM stops every worker.
    """
    parser = argparse.ArgumentParser(description="serve Placement under waitress")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args(argv)

    import socket

    sock = socket.create_server((args.host, 0), backlog=1024)
    port = sock.getsockname()[1]
    children = []
    for _ in range(args.processes - 1):
        pid = os.fork()
        if pid == 0:
            return _serve(sock, args.threads)
        children.append(pid)

    def stop(signum: int, frame: Any) -> None:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    partial = args.port_file + ".tmp"
    with open(partial, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.replace(partial, args.port_file)
    print(
        f"placement: serving on {args.host}:{port}, {args.processes} processes x "
        f"{args.threads} threads",
        flush=True,
    )
    return _serve(sock, args.threads)


def _serve(sock: Any, threads: int) -> int:
    """One worker: load Placement and serve ``sock`` until SIGTERM."""
    import waitress.server
    from placement import wsgi

    app = wsgi.init_application()
    server = waitress.server.create_server(app, sockets=[sock], threads=threads, ident="placement")
    try:
        server.run()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(serve_main())
