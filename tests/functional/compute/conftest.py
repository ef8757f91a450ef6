"""Compute services against the real Placement and a real oslo.messaging transport.

Every service of a test shares one ``fake://`` transport (fake transports do
not see each other). The conductor side is a real RPC server on topic
``conductor`` whose endpoint only records the reports it receives.
"""

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from resize_sched import conf as rs_conf
from resize_sched import rpc
from resize_sched.compute.service import ComputeService
from resize_sched.conductor import rpcapi as conductor_rpcapi
from resize_sched.context import RequestContext
from resize_sched.placement.embedded import PlacementInProcess

TIMEOUT = 10.0


@dataclass(frozen=True)
class Report:
    """One call the conductor received."""

    method: str
    kwargs: dict[str, Any]
    request_id: str


@dataclass
class RecordingConductor:
    """The conductor's RPC endpoint, reduced to recording what compute hosts report."""

    target = messaging.Target(
        namespace=conductor_rpcapi.NAMESPACE, version=conductor_rpcapi.VERSION
    )
    reports: list[Report] = field(default_factory=list)
    compute_reports: list[Report] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def _record(self, ctxt: RequestContext, method: str, **kwargs: Any) -> None:
        with self._cond:
            self.reports.append(Report(method, kwargs, ctxt.request_id))
            self._cond.notify_all()

    @messaging.expose
    def build_done(self, ctxt: RequestContext, server_uuid: str) -> None:
        self._record(ctxt, "build_done", server_uuid=server_uuid)

    @messaging.expose
    def resize_prepared(
        self, ctxt: RequestContext, migration_uuid: str, host: str | None = None
    ) -> None:
        self._record(ctxt, "resize_prepared", migration_uuid=migration_uuid, host=host)

    @messaging.expose
    def resize_finished(self, ctxt: RequestContext, migration_uuid: str) -> None:
        self._record(ctxt, "resize_finished", migration_uuid=migration_uuid)

    @messaging.expose
    def operation_failed(
        self,
        ctxt: RequestContext,
        operation: str,
        reason: str,
        server_uuid: str,
        migration_uuid: str | None = None,
        host: str | None = None,
    ) -> None:
        self._record(
            ctxt,
            "operation_failed",
            operation=operation,
            reason=reason,
            server_uuid=server_uuid,
            migration_uuid=migration_uuid,
            host=host,
        )

    @messaging.expose
    def compute_report(self, ctxt: RequestContext, **kwargs: Any) -> None:
        # NOTE: heartbeats go to their own list: the tests of operations
        # count every other report.
        with self._cond:
            self.compute_reports.append(Report("compute_report", kwargs, ctxt.request_id))
            self._cond.notify_all()

    def wait_for(self, method: str, timeout: float = TIMEOUT, **match: Any) -> Report:
        """The first report of ``method`` whose kwargs include ``match``."""

        def found() -> Report | None:
            for report in self.reports:
                if report.method == method and match.items() <= report.kwargs.items():
                    return report
            return None

        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None, timeout):
                pytest.fail(f"no {method} {match} within {timeout}s; got {self.reports}")
            report = found()
            assert report is not None
            return report

    def settle(self, seconds: float = 0.3) -> list[Report]:
        """All reports, after giving stray ones ``seconds`` to arrive."""
        time.sleep(seconds)
        with self._cond:
            return list(self.reports)


def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT) -> None:
    """Poll ``predicate`` until true, failing the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s")
        time.sleep(0.02)


def serve_conductor(
    transport: messaging.Transport, endpoint: RecordingConductor
) -> messaging.MessageHandlingServer:
    """Start a real RPC server for ``endpoint`` on topic ``conductor``."""
    target = messaging.Target(topic=conductor_rpcapi.TOPIC, server="test-conductor")
    server = rpc.get_server(transport, target, [endpoint])
    server.start()
    return server


def parsed_conf(**groups: dict[str, Any]) -> cfg.ConfigOpts:
    """A parsed resize_sched ConfigOpts with ``group={option: value}`` overrides."""
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    for group, values in groups.items():
        for name, value in values.items():
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    return conf


@pytest.fixture
def transport() -> Iterator[messaging.Transport]:
    """One in-memory transport for the test's services and its conductor."""
    # A private exchange: fake:// transports in one process share exchanges.
    transport = rpc.get_transport(
        parsed_conf(), url="fake://", exchange=f"compute_tests_{uuid.uuid4().hex[:8]}"
    )
    yield transport
    transport.cleanup()


@pytest.fixture
def conductor(transport: messaging.Transport) -> Iterator[RecordingConductor]:
    """A recording conductor served on ``transport``."""
    endpoint = RecordingConductor()
    server = serve_conductor(transport, endpoint)
    yield endpoint
    server.stop()
    server.wait()


@pytest.fixture
def make_conf(placement: PlacementInProcess) -> Callable[..., cfg.ConfigOpts]:
    """``make_conf(host, compute={...}, fake_driver={...})``: a compute host's config."""

    def factory(host: str, **groups: dict[str, Any]) -> cfg.ConfigOpts:
        groups.setdefault("compute", {}).setdefault("update_interval", 0)
        conf = parsed_conf(DEFAULT={"host": host}, **groups)
        return placement.configure(conf)

    return factory


@pytest.fixture
def make_compute(
    make_conf: Callable[..., cfg.ConfigOpts],
    transport: messaging.Transport,
    conductor: RecordingConductor,
) -> Iterator[Callable[..., ComputeService]]:
    """``make_compute(host, **groups)``: a started compute service; stopped after the test."""
    services: list[ComputeService] = []

    def factory(host: str, **groups: dict[str, Any]) -> ComputeService:
        service = ComputeService(make_conf(host, **groups), transport=transport)
        services.append(service)
        service.start()
        return service

    yield factory
    # NOTE: stopping a threading RPC server that has handled a message takes up
    # to a second (futurist's idle worker time-out): stop them side by side.
    with concurrent.futures.ThreadPoolExecutor() as pool:
        for future in [pool.submit(service.stop) for service in services]:
            future.result()
