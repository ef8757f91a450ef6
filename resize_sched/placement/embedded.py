"""The real Placement (openstack-placement) embedded in this process.

Used by the all-in-one deployment, the demo, the benchmark and the functional
tests; it needs the ``placement`` extra (``pip install resize_sched[placement]``),
never a conductor that runs beside an existing Placement.

Two ways to reach it, both through a real keystoneauth1 Session/Adapter built
from our ``[placement]`` config group, exactly as the daemons build theirs:

* :class:`PlacementInProcess`: no socket. The endpoint is a made-up host name
  (``http://placement-<hex>.test/placement``); while the fixture runs, every
  ``requests.Session`` hands requests for that prefix to a transport adapter
  that calls Placement's WSGI app in the calling thread.
* :class:`PlacementHTTP`: the same app served by a single-threaded wsgiref
  server on 127.0.0.1 in a background thread.

Placement keeps its database behind a process-global oslo.db enginefacade
(``placement.db_api.placement_context_manager``). Each fixture owns its own
SQLite file and engine; every request runs under one process-wide lock with
that fixture's engine patched into the global facade, so fixtures never see
each other's data (even if two are alive at once) and SQLite only ever sees one
writer, which it needs. The schema is built once per process with Placement's
own alembic migrations plus its trait and resource-class sync, then each
fixture starts from a copy of that file.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
import wsgiref.simple_server
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import requests
import requests.adapters
import requests.structures
import requests.utils
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_db.sqlalchemy import engines
from oslo_log import log as logging
from placement import conf as placement_conf
from placement import db_api as placement_db
from placement import deploy
from placement.db.sqlalchemy import migration
from placement.objects import resource_class, trait

from resize_sched import conf as rs_conf
from resize_sched.conf import placement as rs_placement_conf
from resize_sched.placement.client import PlacementClient, owner_trait

#: The owner trait of a deployment left at the default ``[placement] deployment_name``.
DEFAULT_OWNER_TRAIT = owner_trait(rs_placement_conf.DEFAULT_DEPLOYMENT_NAME)

LOG = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# Every request to any fixture's Placement runs under this lock (see module doc).
_DB_LOCK = threading.Lock()
_TEMPLATE_LOCK = threading.Lock()
_template_path: str | None = None


# -- database ------------------------------------------------------------------


def _facade() -> Any:
    ctx = placement_db.placement_context_manager
    if not ctx.is_started:
        # The global factory must be started before an engine can be patched
        # in; give it a throw-away in-memory database, which nothing uses.
        ctx.configure(connection="sqlite://")
    return ctx


def _bound_factory(engine: Any) -> Any:
    """An enginefacade factory using ``engine``, for ``patch_factory``."""
    ctx = _facade()
    reset = ctx.patch_engine(engine)
    try:
        return ctx._factory  # the _TestTransactionFactory patch_engine made
    finally:
        reset()


@contextlib.contextmanager
def _using(factory: Any) -> Iterator[None]:
    """Serialise on the process lock with ``factory`` patched in."""
    with _DB_LOCK:
        reset = _facade().patch_factory(factory)
        try:
            yield
        finally:
            reset()


def _sync_reference_data(conf: cfg.ConfigOpts) -> None:
    # NOTE: these flags are process-global "already synced" markers.
    trait._TRAITS_SYNCED = False
    resource_class._RESOURCE_CLASSES_SYNCED = False
    deploy.update_database(conf)


def _template_db(conf: cfg.ConfigOpts) -> str:
    """Build (once per process) a migrated, synced database file to copy."""
    global _template_path
    with _TEMPLATE_LOCK:
        if _template_path is None:
            tmpdir = tempfile.mkdtemp(prefix="placement-template-")
            atexit.register(shutil.rmtree, tmpdir, True)
            path = os.path.join(tmpdir, "placement.db")
            engine = engines.create_engine(f"sqlite:///{path}")
            try:
                with _using(_bound_factory(engine)):
                    migration.upgrade("head")
                    _sync_reference_data(conf)
            finally:
                engine.dispose()
            _template_path = path
        return _template_path


def _placement_conf(connection: str) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    conf.set_override("auth_strategy", "noauth2", group="api")
    conf.set_override("connection", connection, group="placement_database")
    conf([], project="placement", default_config_files=[])
    return conf


# -- in-process transport --------------------------------------------------------


class WSGITransport(requests.adapters.BaseAdapter):
    """A requests transport adapter that calls a WSGI app in-process.

    :param app: the WSGI application.
    :param script_name: the URL path the app is mounted under.
    """

    def __init__(self, app: WSGIApp, script_name: str = "") -> None:
        super().__init__()
        self.app = app
        self.script_name = script_name.rstrip("/")

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        url = urllib.parse.urlsplit(request.url or "")
        path = urllib.parse.unquote(url.path)
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes):
            body = b"".join(body)  # type: ignore[arg-type]
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method,
            "SCRIPT_NAME": self.script_name,
            "PATH_INFO": path[len(self.script_name) :] or "/",
            "QUERY_STRING": url.query,
            "SERVER_NAME": url.hostname or "localhost",
            "SERVER_PORT": str(url.port or 80),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": url.scheme,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in request.headers.items():
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
            elif key != "CONTENT_LENGTH":
                environ["HTTP_" + key] = value

        started: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None):
            started["status"], started["headers"] = status, headers
            return lambda data: None

        result = self.app(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()

        response = requests.Response()
        code, _, reason = started["status"].partition(" ")
        response.status_code = int(code)
        response.reason = reason
        response.headers = requests.structures.CaseInsensitiveDict(started["headers"])
        response.encoding = requests.utils.get_encoding_from_headers(response.headers)
        response._content = content
        response.raw = io.BytesIO(content)
        response.url = request.url or ""
        response.request = request
        return response

    def close(self) -> None:
        pass


class _Router:
    """Route requests for registered URL prefixes to in-process transports.

    While at least one prefix is registered, ``requests.Session.get_adapter``
    is wrapped, so sessions the code under test builds itself (keystoneauth's
    from our config) reach the in-process app too. Other URLs are untouched.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, requests.adapters.BaseAdapter] = {}
        self._original: Any = None

    def register(self, prefix: str, transport: requests.adapters.BaseAdapter) -> None:
        with self._lock:
            if not self._routes:
                self._install()
            self._routes[prefix.lower()] = transport

    def unregister(self, prefix: str) -> None:
        with self._lock:
            self._routes.pop(prefix.lower(), None)
            if not self._routes and self._original is not None:
                requests.Session.get_adapter = self._original  # type: ignore[method-assign]
                self._original = None

    def _install(self) -> None:
        original = self._original = requests.Session.get_adapter
        routes = self._routes

        def get_adapter(session: requests.Session, url: str) -> requests.adapters.BaseAdapter:
            lowered = url.lower()
            for prefix, transport in list(routes.items()):
                if lowered.startswith(prefix):
                    return transport
            return original(session, url)

        requests.Session.get_adapter = get_adapter  # type: ignore[method-assign]


ROUTER = _Router()


# -- fixtures ----------------------------------------------------------------------


class PlacementEndpoint:
    """Clients and hosts for a Placement reached at :attr:`endpoint` with noauth2.

    Shared by the embedded fixtures below and by the benchmark's Placement in
    its own process.
    """

    endpoint = ""
    _client: PlacementClient | None = None

    def configure(self, conf: cfg.ConfigOpts, **overrides: Any) -> cfg.ConfigOpts:
        """Point ``conf``'s ``[placement]`` group at this Placement.

        :param conf: a ConfigOpts made by :func:`resize_sched.conf.new_conf`.
        :param overrides: further ``[placement]`` options (e.g. retry counts).
        :returns: ``conf``.
        """
        group = "placement"
        conf.register_opts(ks_loading.get_auth_plugin_conf_options("admin_token"), group=group)
        options = {
            "auth_type": "admin_token",
            "endpoint": self.endpoint,
            "token": "admin",
            "connect_retry_delay": 0.001,
            "status_code_retry_delay": 0.001,
        }
        options.update(overrides)
        for name, value in options.items():
            conf.set_override(name, value, group=group)
        return conf

    def make_conf(self, **overrides: Any) -> cfg.ConfigOpts:
        """A fresh resize_sched ConfigOpts whose ``[placement]`` is this one."""
        return self.configure(rs_conf.new_conf(), **overrides)

    def client(self, **overrides: Any) -> PlacementClient:
        """A new :class:`PlacementClient` built from config, as daemons build it."""
        return PlacementClient.from_conf(self.make_conf(**overrides))

    def add_host(
        self,
        name: str,
        vcpus: int,
        memory_mb: int,
        disk_gb: int,
        *,
        owner: str | None = DEFAULT_OWNER_TRAIT,
        **extra_inventory: Any,
    ) -> str:
        """Create a compute-host provider with inventory; return its uuid.

        ``extra_inventory`` adds classes (``CUSTOM_FPGA=2``) or replaces the
        default records with full ones (``DISK_GB={"total": 10, "reserved": 2}``).
        ``owner`` is the owner trait the provider carries, as a compute service
        of that deployment marks it (the default deployment's unless given);
        None leaves it unmarked, as another service's provider would be.
        """
        if self._client is None:
            self._client = self.client()
        rp = self._client.create_resource_provider(name)
        inventory: dict[str, Any] = {"VCPU": vcpus, "MEMORY_MB": memory_mb, "DISK_GB": disk_gb}
        inventory.update(extra_inventory)
        inventory = {rc: v for rc, v in inventory.items() if v}
        generation = self._client.set_inventory(rp["uuid"], inventory, generation=rp["generation"])
        if owner is not None:
            self._client.put_traits(rp["uuid"], [owner], generation)
        return rp["uuid"]


class PlacementInProcess(PlacementEndpoint):
    """A real Placement on a fresh SQLite database, reached without a socket.

    Use as a context manager, or call :meth:`start` and :meth:`stop`.

    :param state_dir: directory for the database file; a temporary one (removed
        on stop) when None.
    """

    def __init__(self, state_dir: str | None = None) -> None:
        self._own_dir = state_dir is None
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="placement-")
        os.makedirs(self.state_dir, exist_ok=True)
        self.db_path = os.path.join(self.state_dir, "placement.db")
        self.endpoint = ""
        self.setup_ms = 0.0
        self._engine: Any = None
        self._factory: Any = None
        self._client: PlacementClient | None = None
        self.conf: cfg.ConfigOpts | None = None
        self.app: WSGIApp | None = None

    # lifecycle

    def start(self) -> PlacementInProcess:
        started = time.perf_counter()
        url = f"sqlite:///{self.db_path}"
        self.conf = _placement_conf(url)
        if not os.path.exists(self.db_path):
            # NOTE: an existing database is kept: an all-in-one restarted on
            # the same state directory resumes with its providers and
            # allocations.
            shutil.copyfile(_template_db(self.conf), self.db_path)
        self._engine = engines.create_engine(url)
        self._factory = _bound_factory(self._engine)
        with _using(self._factory):
            app = deploy.loadapp(self.conf)
        self.app = self._bind(app)
        self._serve()
        self.setup_ms = (time.perf_counter() - started) * 1000
        LOG.debug("Placement at %s ready in %.1f ms", self.endpoint, self.setup_ms)
        return self

    def stop(self) -> None:
        self._unserve()
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
        if self._own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> PlacementInProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _bind(self, app: WSGIApp) -> WSGIApp:
        factory = self._factory

        def bound(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            # NOTE: noauth2 gives the admin token the admin role alone; a
            # deployment's services call Placement as a user with the admin
            # and service roles, and POST /reshaper (a compute service
            # re-describing its host) is allowed to the service role only.
            if environ.get("HTTP_X_AUTH_TOKEN") == "admin":
                environ.setdefault("HTTP_X_ROLES", "admin,service")
            with _using(factory):
                result = app(environ, start_response)
                try:
                    return list(result)
                finally:
                    close = getattr(result, "close", None)
                    if close:
                        close()

        return bound

    def _serve(self) -> None:
        prefix = f"http://placement-{uuid.uuid4().hex[:12]}.test"
        self._prefix = prefix
        self.endpoint = prefix + "/placement"
        assert self.app is not None
        ROUTER.register(prefix + "/", WSGITransport(self.app, script_name="/placement"))

    def _unserve(self) -> None:
        ROUTER.unregister(self._prefix + "/")


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        LOG.debug("placement-http: %s", format % args)


class PlacementHTTP(PlacementInProcess):
    """The same Placement, served over HTTP (one thread).

    :param state_dir: as for :class:`PlacementInProcess`.
    :param host: the address to listen on.
    :param port: the port; 0 picks a free one.
    """

    def __init__(
        self, state_dir: str | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        super().__init__(state_dir)
        self.bind_host = host
        self.bind_port = port

    def _serve(self) -> None:
        assert self.app is not None
        self._server = wsgiref.simple_server.make_server(
            self.bind_host, self.bind_port, self.app, handler_class=_QuietHandler
        )
        self.port = self._server.server_port
        self.endpoint = f"http://{self.bind_host}:{self.port}/placement"
        script = "/placement"
        app = self.app

        def mounted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
            path = environ.get("PATH_INFO", "")
            if path.startswith(script):
                environ["SCRIPT_NAME"] = script
                environ["PATH_INFO"] = path[len(script) :] or "/"
            return app(environ, start_response)

        self._server.set_app(mounted)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"placement-http-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def _unserve(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
