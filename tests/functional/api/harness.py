"""The API service over a real database and a real RPC transport, for tests.

* :class:`CastRecorder`: a conductor RPC endpoint that records every cast it
  receives. It runs in a real oslo.messaging server on the ``fake://``
  transport the API's conductor client casts on, so the tests see the casts
  as a conductor would: serialised, routed by topic, namespace and version.
* :class:`ApiHarness`: configuration, a fresh SQLite database, the transport,
  the recorder's RPC server and the WSGI application, with helpers to call
  it, to set servers up through the data API, and to prove a refused request
  changed nothing (:meth:`ApiHarness.snapshot`, :meth:`ApiHarness.assert_no_cast`).
* :class:`WaitressThread`: the application served by waitress on 127.0.0.1.
"""

from __future__ import annotations

import json
import pathlib
import queue
import threading
import uuid
from dataclasses import dataclass
from typing import Any

import oslo_messaging as messaging
import sqlalchemy as sa
import waitress
import webob
from waitress import wasyncore

from resize_sched import actions, rpc, strategies
from resize_sched import conf as rs_conf
from resize_sched.api.app import ComputeApp, build_app
from resize_sched.conductor.rpcapi import NAMESPACE, TOPIC, VERSION, ConductorAPI
from resize_sched.context import RequestContext, admin_context
from resize_sched.db import models
from tests.functional.fixtures.database import fresh_sqlite_database

ADMIN = "admin:admin"
ALICE = "alice:project-a"
BOB = "bob:project-b"
SENTINEL = "sentinel-cast"


@dataclass
class Cast:
    """One cast the recorder received."""

    method: str
    context: RequestContext
    kwargs: dict[str, Any]


class CastRecorder:
    """The conductor's RPC interface, recording instead of acting: every
    method the API casts."""

    target = messaging.Target(namespace=NAMESPACE, version=VERSION)

    def __init__(self) -> None:
        self.received: queue.Queue[Cast] = queue.Queue()

    def _record(self, method: str, ctxt: RequestContext, **kwargs: Any) -> None:
        self.received.put(Cast(method, ctxt, kwargs))

    @messaging.expose
    def build_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("build_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def resize_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("resize_server", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def confirm_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("confirm_resize", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def revert_resize(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("revert_resize", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def stop_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("stop_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def start_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("start_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def delete_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("delete_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def live_migrate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("live_migrate_server", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def live_migration_abort(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("live_migration_abort", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def live_migration_force_complete(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("live_migration_force_complete", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def evacuate_server(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record("evacuate_server", ctxt, migration_uuid=migration_uuid)

    @messaging.expose
    def shelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("shelve_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def shelve_offload_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("shelve_offload_server", ctxt, server_uuid=server_uuid)

    @messaging.expose
    def unshelve_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record("unshelve_server", ctxt, server_uuid=server_uuid)


class CastBus:
    """A ``fake://`` transport with a recording conductor listening on it.

    Shared by every test of a session: stopping a threading RPC server takes
    about a second (its worker threads' idle time-out), so it is done once.
    """

    def __init__(self, conf: Any) -> None:
        self.transport = rpc.get_transport(
            conf, url="fake://", exchange=f"api_tests_{uuid.uuid4().hex[:8]}"
        )
        self.recorder = CastRecorder()
        self.rpc_server = rpc.get_server(
            self.transport,
            messaging.Target(topic=TOPIC, server="recorder"),
            [self.recorder],
        )
        # NOTE: one handler thread, so casts are recorded in the order sent
        # (the sentinel that ends each test's casts must come last). The
        # option exists once the server is made, and is read at start.
        conf.set_override("executor_thread_pool_size", 1)
        self.rpc_server.start()

    def close(self) -> None:
        self.rpc_server.stop()
        self.rpc_server.wait()
        self.transport.cleanup()


class ApiHarness:
    """The API application, its database and a recorded conductor.

    :param directory: where the SQLite database goes.
    :param claim_strategy: ``[resize] claim_strategy``.
    :param bus: a shared :class:`CastBus`; a private one (closed with the
        harness) when None.
    """

    def __init__(
        self,
        directory: pathlib.Path,
        claim_strategy: str = "max_flavor",
        bus: CastBus | None = None,
    ) -> None:
        self.conf = rs_conf.new_conf()
        rs_conf.parse_args(self.conf, [], default_config_files=[])
        self.conf.set_override("auth_strategy", "noauth2", group="api")
        self.conf.set_override("claim_strategy", claim_strategy, group="resize")
        self.db = fresh_sqlite_database(directory)
        self._own_bus = bus is None
        self.bus = bus or CastBus(self.conf)
        self.transport = self.bus.transport
        self.recorder = self.bus.recorder
        self.conductor = ConductorAPI(self.conf, self.transport)
        self.app: ComputeApp = build_app(self.conf, self.db, self.conductor)

    def close(self) -> None:
        if self._own_bus:
            self.bus.close()
        else:
            # Leave the shared bus empty for the next test.
            self.conductor.delete_server(admin_context(), SENTINEL)
            while self.next_cast().kwargs.get("server_uuid") != SENTINEL:
                pass
        self.db.dispose()

    # -- calling the API ------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = ADMIN,
        version: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> webob.Response:
        """Call the application in-process (a real WSGI call).

        :param body: JSON-encoded when given; ``raw`` sends bytes as they are.
        :param token: ``USER:PROJECT`` for noauth2; None sends no token.
        :param version: sent as ``OpenStack-API-Version: compute VERSION``.
        """
        req = webob.Request.blank(path, method=method)
        if token is not None:
            req.headers["X-Auth-Token"] = token
        if version is not None:
            req.headers["OpenStack-API-Version"] = f"compute {version}"
        if body is not None or raw is not None:
            req.body = raw if raw is not None else json.dumps(body).encode()
            req.content_type = "application/json"
        for key, value in (headers or {}).items():
            req.headers[key] = value
        return req.get_response(self.app)

    # -- casts ----------------------------------------------------------------------------

    def next_cast(self, timeout: float = 5.0) -> Cast:
        """The next cast the conductor received (waits for it)."""
        try:
            return self.recorder.received.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no cast reached the conductor in {timeout}s") from None

    def assert_no_cast(self) -> None:
        """Nothing was cast since the last :meth:`next_cast`.

        A sentinel cast goes through the same transport and topic; every
        earlier cast would be delivered before (or with) it.
        """
        self.conductor.delete_server(admin_context(), SENTINEL)
        seen = []
        while True:
            cast = self.next_cast()
            if cast.kwargs.get("server_uuid") == SENTINEL:
                break
            seen.append(cast)
        try:
            seen.append(self.recorder.received.get(timeout=0.1))
        except queue.Empty:
            pass
        assert seen == [], f"unexpected casts: {seen}"

    # -- the database -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table, to compare before and after a request."""
        with self.db.engine.connect() as conn:
            return {
                table.name: [
                    tuple(row)
                    for row in conn.execute(sa.select(table).order_by(*table.primary_key.columns))
                ]
                for table in models.Base.metadata.sorted_tables
            }

    def flavor(self, name: str, vcpus: int = 1, memory_mb: int = 512, **kw: Any) -> Any:
        kw.setdefault("flavorid", name)
        return self.db.flavor_create(name, vcpus, memory_mb, kw.pop("root_gb", 1), **kw)

    def server(
        self,
        flavor: Any,
        *,
        project_id: str = "project-a",
        user_id: str = "alice",
        active: bool = True,
        name: str = "vm",
    ) -> Any:
        """A server recorded as the API would; ACTIVE on host ``h1`` unless told."""
        server = actions.create_server(
            self.db, name=name, flavorid=flavor.flavorid, project_id=project_id, user_id=user_id
        )
        if not active:
            return server
        return self.place(server.uuid)

    def place(self, server_uuid: str, host: str = "h1") -> Any:
        """Do the conductor's part of a build: the server is ACTIVE on ``host``."""
        return self.db.server_update(
            server_uuid,
            status="ACTIVE",
            vm_state="active",
            task_state=None,
            host=host,
            node=host,
            rp_uuid=str(uuid.uuid4()),
            placement_generation=1,
        )

    def finish_resize(self, server_uuid: str, migration_uuid: str, new_flavor: Any) -> Any:
        """Do the conductor's and hosts' part of a resize: VERIFY_RESIZE on ``h2``."""
        self.db.server_update(
            server_uuid,
            status="VERIFY_RESIZE",
            vm_state="resized",
            task_state=None,
            host="h2",
            node="h2",
            flavor=new_flavor,
        )
        return self.db.migration_update(
            migration_uuid,
            status="finished",
            dest_host="h2",
            dest_node="h2",
            dest_rp_uuid=str(uuid.uuid4()),
        )

    def verify_resize(self, server: Any, new_flavor: Any) -> Any:
        """Take an ACTIVE server to VERIFY_RESIZE on ``h2`` with a ``finished`` migration."""
        strategy = strategies.load(self.conf.resize.claim_strategy)
        migration = actions.begin_resize(self.db, strategy, server.uuid, new_flavor.flavorid)
        return self.finish_resize(server.uuid, migration.uuid, new_flavor)


class WaitressThread:
    """An application served by waitress on 127.0.0.1 (a free port) in a thread.

    The asyncore loop runs in short slices so :meth:`stop` can end it from
    the test's thread and close every socket in the loop's own thread.
    """

    def __init__(self, app: Any) -> None:
        self._map: dict[int, Any] = {}
        self.server: Any = waitress.create_server(
            app, map=self._map, host="127.0.0.1", port=0, threads=4
        )
        self.endpoint = f"http://127.0.0.1:{self.server.effective_port}/v2.1"
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="waitress", daemon=True)

    def _run(self) -> None:
        while not self._stopping.is_set():
            wasyncore.loop(timeout=0.05, map=self._map, count=1)
        self.server.task_dispatcher.shutdown()
        wasyncore.close_all(self._map)

    def __enter__(self) -> WaitressThread:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)
