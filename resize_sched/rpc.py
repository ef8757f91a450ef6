"""oslo.messaging plumbing shared by every service: transport, serializer,
clients and servers, all built from a ``ConfigOpts`` passed in (no global).

Business errors an RPC call may raise on purpose are listed with
``oslo_messaging.expected_exceptions`` on the endpoint; they travel back to a
caller with their type. Casts (most of our API) get no reply at all.

Notifications (:mod:`resize_sched.notifications`) go through an
oslo.messaging ``Notifier`` configured by ``[oslo_messaging_notifications]``;
resize_sched's defaults there are ``driver = noop`` (nothing is sent) and
``topics = versioned_notifications``.

Queues (doc/messaging.rst): oslo.messaging's ``[oslo_messaging_rabbit]``
options reach the driver unchanged, since every transport is built on the
service's own ``ConfigOpts``. :func:`queue_durability` reads them (and the
transport URL's query, which overrides them) to say whether a queued cast
survives a broker restart; :func:`get_transport` logs a warning when not.
"""

import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import oslo_messaging as messaging
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.context import RequestContext

LOG = logging.getLogger(__name__)
#: The cast trace (:class:`TracedClient`, :meth:`ContextSerializer.deserialize_context`):
#: DEBUG lines a test harness turns on to count casts lost or delivered twice.
TRACE = logging.getLogger(__name__ + ".trace")

#: The key of the serialized context that carries a message's own id.
MESSAGE_ID_KEY = "rpc_message_id"

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


# -- queue durability -----------------------------------------------------------------

#: The RabbitMQ driver's option group.
RABBIT_GROUP = "oslo_messaging_rabbit"

#: Transport URL schemes served by the RabbitMQ driver.
_RABBIT_SCHEMES = frozenset({"rabbit", "kombu"})

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True)
class QueueDurability:
    """What the RPC queues of a configuration are, and whether that is a problem.

    :ivar kind: ``quorum``, ``classic durable``, ``classic non-durable``, or
        ``not RabbitMQ`` (a ``fake://`` transport, say: nothing to check).
    :ivar durable: a cast queued for a consumer that is down survives a broker
        restart.
    :ivar problem: a one-line warning, or None.
    :ivar error: a one-line configuration error oslo.messaging refuses at the
        first queue it declares, or None.
    """

    kind: str
    durable: bool
    problem: str | None = None
    error: str | None = None


def register_rabbit_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[oslo_messaging_rabbit]`` on ``conf`` (as the driver does
    when a rabbit transport is built), so the options can be read before."""
    from oslo_messaging._drivers import amqp as amqp_driver
    from oslo_messaging._drivers import impl_rabbit

    conf.register_opts(impl_rabbit.rabbit_opts, group=RABBIT_GROUP)
    conf.register_opts(amqp_driver.amqp_opts, group=RABBIT_GROUP)


def queue_durability(conf: cfg.ConfigOpts, url: str | None = None) -> QueueDurability:
    """How ``[oslo_messaging_rabbit]`` (with the URL's query over it) makes the RPC queues.

    :param conf: a parsed configuration.
    :param url: the transport URL; ``[DEFAULT] transport_url`` when None.
    :raises oslo_messaging.InvalidTransportURL: the URL cannot be parsed.
    """
    parsed = messaging.TransportURL.parse(conf, url)
    if parsed.transport not in _RABBIT_SCHEMES:
        return QueueDurability(kind="not RabbitMQ", durable=True)
    register_rabbit_opts(conf)
    group = conf[RABBIT_GROUP]

    def flag(name: str) -> bool:
        if name in parsed.query:
            return parsed.query[name].strip().lower() in _TRUE
        return bool(group[name])

    quorum = flag("rabbit_quorum_queue")
    error = None
    if quorum and flag("rabbit_ha_queues"):
        error = (
            f"[{RABBIT_GROUP}] rabbit_quorum_queue and rabbit_ha_queues are both set; "
            "oslo.messaging refuses to declare a queue: turn rabbit_ha_queues off"
        )
    if quorum:
        return QueueDurability(kind="quorum", durable=True, error=error)
    if flag("amqp_durable_queues"):
        return QueueDurability(kind="classic durable", durable=True, error=error)
    return QueueDurability(
        kind="classic non-durable",
        durable=False,
        problem=(
            "RPC queues are classic and non-durable: a broker restart drops every "
            "cast still queued (a step for a compute host that is down, say) and "
            "only the conductor's sweep re-sends it, after [conductor] stuck_after; "
            f"set [{RABBIT_GROUP}] rabbit_quorum_queue = true (see doc/messaging.rst)"
        ),
        error=error,
    )


def _warn_queue_durability(conf: cfg.ConfigOpts, url: str | None) -> None:
    try:
        durability = queue_durability(conf, url)
    except messaging.InvalidTransportURL:
        return  # get_rpc_transport reports it
    if durability.error:
        LOG.error("%s", durability.error)
    elif durability.problem:
        LOG.warning("%s", durability.problem)
    else:
        LOG.debug("RPC queues: %s", durability.kind)


def get_transport(
    conf: cfg.ConfigOpts, url: str | None = None, exchange: str | None = None
) -> messaging.Transport:
    """The RPC transport named by ``[DEFAULT] transport_url`` (or ``url``).

    ``[oslo_messaging_rabbit]`` (quorum queues and the rest) applies as
    oslo.messaging documents it; classic non-durable queues are logged as a
    warning (:func:`queue_durability`).

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
    _warn_queue_durability(conf, url)
    return messaging.get_rpc_transport(conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS)


# NOTE: the id serialize_context gave the message this thread is sending, for
# TracedClient to log once the cast returns (oslo.messaging serializes the
# context inside cast, on the caller's thread).
_sending = threading.local()


class ContextSerializer(messaging.NoOpSerializer):
    """Carries :class:`RequestContext` across RPC as a plain dict.

    Every serialized context gets a fresh :data:`MESSAGE_ID_KEY`, so each
    message can be followed from its sender to its receiver; the receiving
    side logs it on :data:`TRACE` (DEBUG) as ``rpc received <id>``.
    """

    def serialize_context(self, ctxt: Any) -> dict[str, Any]:
        data = ctxt.to_dict() if isinstance(ctxt, RequestContext) else dict(ctxt or {})
        data[MESSAGE_ID_KEY] = _sending.message_id = uuid.uuid4().hex
        return data

    def deserialize_context(self, ctxt: dict[str, Any]) -> RequestContext:
        message_id = (ctxt or {}).get(MESSAGE_ID_KEY)
        if message_id:
            TRACE.debug("rpc received %s", message_id)
        return RequestContext.from_dict(ctxt or {})


class _TracedCast:
    """A prepared call context whose ``cast`` is traced; the rest delegated."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def cast(self, ctxt: Any, method: str, **kwargs: Any) -> None:
        """Cast, then log ``rpc sent <id> <method> <target>`` on :data:`TRACE`,
        or ``rpc refused ...`` when the cast raised (the sender knows)."""
        _sending.message_id = None
        target = self._inner.target
        where = f"{target.topic}.{target.server}" if target.server else str(target.topic)
        try:
            self._inner.cast(ctxt, method, **kwargs)
        except Exception as exc:
            TRACE.debug("rpc refused %s %s %s: %s", _sending.message_id, method, where, exc)
            raise
        TRACE.debug("rpc sent %s %s %s", _sending.message_id, method, where)


class TracedClient(_TracedCast):
    """An ``RPCClient`` whose casts (its own and its prepared contexts') are
    logged on :data:`TRACE` once the transport took them."""

    def prepare(self, *args: Any, **kwargs: Any) -> _TracedCast:
        return _TracedCast(self._inner.prepare(*args, **kwargs))


def get_client(
    transport: messaging.Transport,
    target: messaging.Target,
    version_cap: str | None = None,
) -> TracedClient:
    """An RPC client for ``target``; ``version_cap`` from ``[upgrade_levels]``.

    An ``RPCClient`` wrapped so that each cast is traced (:class:`TracedClient`).
    """
    return TracedClient(
        messaging.get_rpc_client(
            transport, target, version_cap=version_cap, serializer=ContextSerializer()
        )
    )


def get_server(
    transport: messaging.Transport,
    target: messaging.Target,
    endpoints: Sequence[Any],
) -> messaging.MessageHandlingServer:
    """A threading RPC server; call ``start()``, then ``stop()`` and ``wait()``.

    Only an endpoint's methods marked ``@messaging.expose`` can be called over
    RPC; its other attributes (its database, its clients) cannot.
    """
    return messaging.get_rpc_server(
        transport,
        target,
        list(endpoints),
        serializer=ContextSerializer(),
        access_policy=messaging.ExplicitRPCAccessPolicy,
    )


# -- notifications ----------------------------------------------------------------------

#: The oslo.messaging option group of the notifier.
NOTIFICATIONS_GROUP = "oslo_messaging_notifications"

#: resize_sched's defaults for ``[oslo_messaging_notifications]``: off, and on
#: Nova's versioned topic when turned on.
NOTIFICATION_DEFAULTS: dict[str, list[str]] = {
    "driver": ["noop"],
    "topics": ["versioned_notifications"],
}

#: Drivers that never use the notification transport.
_LOCAL_DRIVERS = frozenset({"noop", "log"})


def _notifier_opts() -> list[cfg.Opt]:
    # NOTE: the very Opt objects oslo.messaging's Notifier registers itself, so
    # registering them here first never clashes with its own registration.
    from oslo_messaging.notify import notifier as notifier_module

    return notifier_module._notifier_opts


def register_notification_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[oslo_messaging_notifications]`` on ``conf`` with our defaults.

    The defaults are set on ``conf`` only (oslo.messaging's own stay as they
    are for anyone else in the process). Safe to call more than once, and
    after ``conf`` was parsed.
    """
    conf.register_opts(_notifier_opts(), group=NOTIFICATIONS_GROUP)
    for name, value in NOTIFICATION_DEFAULTS.items():
        conf.set_default(name, value, group=NOTIFICATIONS_GROUP)


def set_notification_defaults() -> None:
    """oslo-config-generator's hook (``oslo.config.opts.defaults``): show our
    ``[oslo_messaging_notifications]`` defaults in the sample config.

    NOTE: this changes oslo.messaging's option objects for the whole process;
    only the generator calls it, never a service.
    """
    cfg.set_defaults(_notifier_opts(), **NOTIFICATION_DEFAULTS)


def notifications_enabled(conf: cfg.ConfigOpts) -> bool:
    """Whether ``[oslo_messaging_notifications] driver`` sends anything."""
    register_notification_opts(conf)
    return any(driver != "noop" for driver in conf.oslo_messaging_notifications.driver)


def get_notification_transport(
    conf: cfg.ConfigOpts, url: str | None = None
) -> messaging.Transport:
    """The notification transport: ``[oslo_messaging_notifications] transport_url``,
    else ``url``, else (oslo.messaging's rule) ``[DEFAULT] transport_url``."""
    register_notification_opts(conf)
    _register_library_groups(conf)
    url = conf.oslo_messaging_notifications.transport_url or url
    return messaging.get_notification_transport(
        conf, url=url, allowed_remote_exmods=ALLOWED_EXMODS
    )


def get_notifier(
    conf: cfg.ConfigOpts,
    publisher_id: str,
    transport: messaging.Transport | None = None,
) -> messaging.Notifier:
    """A Notifier from ``[oslo_messaging_notifications]`` that sends as ``publisher_id``.

    :param conf: the service's ConfigOpts; the group is registered on it.
    :param publisher_id: e.g. ``resize-sched-compute:host1``
        (:func:`resize_sched.notifications.publisher_id`).
    :param transport: a notification transport to share (the caller cleans
        it up); else one is built with :func:`get_notification_transport`.
        When every driver is ``noop`` or ``log`` no broker is used and an
        in-memory ``fake://`` transport is built instead, so the default
        configuration never connects anywhere.
    """
    register_notification_opts(conf)
    if transport is None:
        if set(conf.oslo_messaging_notifications.driver) <= _LOCAL_DRIVERS:
            _register_library_groups(conf)
            transport = messaging.get_notification_transport(conf, url="fake://")
        else:
            transport = get_notification_transport(conf)
    return messaging.Notifier(transport, publisher_id, serializer=ContextSerializer())
