"""The cast trace: every message carries an id of its own, logged by the
sender once the transport took it and by the receiver when it dispatches
it (``resize_sched.rpc.trace``, DEBUG), so a harness can count casts lost
or delivered twice (tests/ha)."""

import logging
import re
import threading

import oslo_messaging as messaging
import pytest
from oslo_config import cfg

from resize_sched import conf as rs_conf
from resize_sched import rpc
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.context import RequestContext, admin_context

TRACE = "resize_sched.rpc.trace"
UUID = "0f7b8c2e-3b7a-4d0e-9a43-2a7f4c7a9b10"


def _conf() -> cfg.ConfigOpts:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    return conf


class _Conductor:
    """Records what build_server got (the conductor's real manager needs a database)."""

    target = messaging.Target(namespace="conductor", version="1.6")

    def __init__(self) -> None:
        self.got: list[RequestContext] = []
        self.done = threading.Event()

    @messaging.expose
    def build_server(self, ctxt: RequestContext, server_uuid: str) -> None:
        self.got.append(ctxt)
        self.done.set()


def _lines(caplog: pytest.LogCaptureFixture, word: str) -> list[list[str]]:
    return [
        r.getMessage().split()
        for r in caplog.records
        if r.name == TRACE and r.getMessage().startswith(f"rpc {word} ")
    ]


def test_each_serialized_context_gets_a_fresh_id() -> None:
    serializer = rpc.ContextSerializer()
    ctxt = admin_context()
    first = serializer.serialize_context(ctxt)
    second = serializer.serialize_context(ctxt)
    assert re.fullmatch(r"[0-9a-f]{32}", first[rpc.MESSAGE_ID_KEY])
    assert first[rpc.MESSAGE_ID_KEY] != second[rpc.MESSAGE_ID_KEY]
    # NOTE: the id is the message's, not the request's: it is not kept.
    assert serializer.deserialize_context(first) == ctxt


def test_a_cast_is_logged_sent_then_received_under_one_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=TRACE)
    conf = _conf()
    transport = rpc.get_transport(conf, "fake://", exchange="rs-trace-test")
    endpoint = _Conductor()
    server = rpc.get_server(
        transport, messaging.Target(topic="conductor", server="c1"), [endpoint]
    )
    server.start()
    try:
        ConductorAPI(conf, transport).build_server(admin_context(), UUID)
        assert endpoint.done.wait(10)
    finally:
        server.stop()
        server.wait()
    sent, received = _lines(caplog, "sent"), _lines(caplog, "received")
    assert len(sent) == 1 and len(received) == 1
    assert sent[0][3:5] == ["build_server", "conductor"]
    assert sent[0][2] == received[0][2]
    assert endpoint.got[0].request_id  # the context still arrives whole


def test_a_cast_the_transport_refuses_is_logged_refused(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger=TRACE)
    conf = _conf()
    transport = rpc.get_transport(conf, "fake://", exchange="rs-trace-refused")

    def down(*args: object, **kwargs: object) -> None:
        raise messaging.MessageDeliveryFailure("the broker is down")

    monkeypatch.setattr(transport, "_send", down)
    with pytest.raises(messaging.MessageDeliveryFailure):
        ConductorAPI(conf, transport).build_server(admin_context(), UUID)
    assert _lines(caplog, "sent") == []
    refused = _lines(caplog, "refused")
    assert len(refused) == 1 and refused[0][3] == "build_server"
    assert re.fullmatch(r"[0-9a-f]{32}", refused[0][2])


def test_the_client_still_answers_what_the_rpcapis_ask() -> None:
    conf = _conf()
    conf.set_override("conductor", "1.5", group="upgrade_levels")
    client = ConductorAPI(conf, rpc.get_transport(conf, "fake://")).client
    assert isinstance(client, rpc.TracedClient)
    assert client.version_cap == "1.5"
    assert client.can_send_version("1.5") and not client.can_send_version("1.6")
