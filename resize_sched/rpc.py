"""oslo.messaging plumbing shared by every service: transport, serializer,
clients and servers, all built from a ``ConfigOpts`` passed in (no global).

Business errors an RPC call may raise on purpose are listed with
``oslo_messaging.expected_exceptions`` on the endpoint; they travel back to a
caller with their type. Casts (most of our API) get no reply at all.
"""

from collections.abc import Sequence
from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)

#: Exceptions allowed to cross RPC and be re-raised with their own type.
ALLOWED_EXMODS = ["resize_sched.exception"]


def _register_library_groups(conf: cfg.ConfigOpts) -> None:
    # NOTE: oslo.messaging registers its tracing and metrics options only on
    # the global cfg.CONF; a transport built on our own ConfigOpts looks them up
    # and fails with NoSuchOptError unless they are registered here too.
    from oslo_messaging._metrics import client as metrics_client
    from oslo_messaging._tracing import client as tracing_client

    for group, opts in (
        ("oslo_messaging_metrics", metrics_client.oslo_messaging_metrics),
        ("oslo_messaging_tracing", tracing_client.oslo_messaging_tracing),
    ):
        try:
            conf.register_opts(opts, group=group)
        except cfg.DuplicateOptError:
            pass


def get_transport(
    conf: cfg.ConfigOpts, url: str | None = None, exchange: str | None = None
) -> messaging.Transport:
    """The RPC transport named by ``[DEFAULT] transport_url`` (or ``url``).

    :param exchange: override ``control_exchange``. NOTE: ``fake://``
        transports in one process share their exchanges by name, so each
        in-process deployment (the all-in-one, a test's) needs its own.
    """
    _register_library_groups(conf)
    if exchange is not None:
        from oslo_messaging import opts as messaging_opts

        for group, opts in messaging_opts.list_opts():
            if group is None:
                conf.register_opts(opts)
        conf.set_override("control_exchange", exchange)
    return messaging.get_rpc_transport(conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)


class ContextSerializer(messaging.NoOpSerializer):
    """Carries :class:`RequestContext` across RPC as a plain dict."""

    def serialize_context(self, ctxt: Any) -> dict[str, Any]:
        if isinstance(ctxt, RequestContext):
            return ctxt.to_dict()
        return dict(ctxt or {})

    def deserialize_context(self, ctxt: dict[str, Any]) -> RequestContext:
        return RequestContext.from_dict(ctxt or {})


def get_client(
    transport: messaging.Transport,
    target: messaging.Target,
    version_cap: str | None = None,
) -> messaging.RPCClient:
    """An RPC client for ``target``; ``version_cap`` from ``[upgrade_levels]``."""
    return messaging.get_rpc_client(
        transport, target, version_cap=version_cap, serializer=ContextSerializer()
    )


def get_server(
    transport: messaging.Transport,
    target: messaging.Target,
    endpoints: Sequence[Any],
) -> messaging.MessageHandlingServer:
    """A threading RPC server; call ``start()``, then ``stop()`` and ``wait()``."""
    return messaging.get_rpc_server(
        transport, target, list(endpoints), serializer=ContextSerializer()
    )
