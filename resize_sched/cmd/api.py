"""``resize-sched-api``: the Compute API subset, served by waitress.

One process serving ``[api] bind_host``:``bind_port`` with ``[wsgi]
threads`` threads. SIGTERM and SIGINT stop it cleanly (requests in hand are
finished); SIGHUP reloads mutable options such as ``[resize]
claim_strategy``. For production, run :mod:`resize_sched.api.wsgi` under
uWSGI or Apache mod_wsgi instead (``doc/api-server.rst``).

Connections are held by waitress's event loop, not by threads: a client
still sending its request, or idle between requests, costs a socket and no
thread. The loop uses ``poll()`` (waitress's default, ``select()``, cannot
watch a descriptor numbered past 1023), holds up to ``[wsgi]
connection_limit`` connections (waitress's own default, 100, let 110 slow
clients stop the API), closes a connection silent for ``[wsgi]
client_socket_timeout`` and one whose request is not all in after ``[wsgi]
request_read_timeout``, however steadily it trickles.
"""

import resource
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

import oslo_messaging as messaging
import sqlalchemy as sa
import waitress
from oslo_config import cfg
from oslo_log import log as logging
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

from resize_sched import checks, exception
from resize_sched import conf as rs_conf
from resize_sched.api import deploy

LOG = logging.getLogger(__name__)

PROG = "resize-sched-api"
DESCRIPTION = (
    "Serve the resize_sched Compute API v2.1 subset (flavors, servers, resize, "
    "confirmResize, revertResize, os-migrations) that openstacksdk and "
    "python-novaclient use. It records requests in the database ([database] "
    "connection) and casts them to the conductor over [DEFAULT] transport_url; it "
    "listens on [api] bind_host:bind_port and authenticates with [api] auth_strategy."
)

#: File descriptors kept beside the client connections: the listening
#: sockets, waitress's wake-up pipe, database and broker connections, logs.
RESERVED_FDS = 128


class ReadTimedChannel(HTTPChannel):
    """waitress's channel, noting when the request it is receiving began."""

    #: ``time.time()`` when the first bytes of the request being received
    #: arrived; None when no request is partly received.
    read_started: float | None = None

    def received(self, data: bytes) -> bool:
        before = self.request
        result = super().received(data)
        if self.request is None:
            self.read_started = None
        elif self.request is not before or self.read_started is None:
            self.read_started = time.time()
        return result


def _close_slow_readers(listener: BaseWSGIServer, now: float, timeout: int) -> int:
    """Mark for closing each channel whose request has been arriving too long.

    :returns: how many were marked.
    """
    cutoff = now - timeout
    closed = 0
    for channel in list(listener.active_channels.values()):
        started = getattr(channel, "read_started", None)
        if started is not None and started < cutoff and not channel.requests:
            # NOTE: waitress closes a channel marked so on its next loop, as
            # it does with those its own maintenance finds idle.
            channel.will_close = True
            closed += 1
    return closed


def _bound_reads(server_map: dict[int, Any], timeout: int) -> None:
    """Give every listener of ``server_map`` the request read timeout."""
    for listener in list(server_map.values()):
        if not isinstance(listener, BaseWSGIServer):
            continue
        listener.channel_class = ReadTimedChannel
        idle_maintenance = listener.maintenance

        def maintenance(
            now: float, _listener: Any = listener, _idle: Any = idle_maintenance
        ) -> None:
            _idle(now)
            closed = _close_slow_readers(_listener, now, timeout)
            if closed:
                LOG.info(
                    "Closed %d connection(s) whose request took over %d s to arrive "
                    "([wsgi] request_read_timeout)",
                    closed,
                    timeout,
                )

        # NOTE: waitress calls maintenance() from its loop every
        # cleanup_interval; the idle timeout is its own, this adds the other.
        listener.maintenance = maintenance


def connection_limit(wanted: int) -> int:
    """Raise RLIMIT_NOFILE to fit ``wanted`` connections; the limit that fits.

    :param wanted: ``[wsgi] connection_limit``.
    :returns: ``wanted``, or less when the hard open-file limit is too low
        (logged as a warning).
    """
    needed = wanted + RESERVED_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (OSError, ValueError) as exc:
            LOG.warning("Cannot raise the open-file limit to %d: %s", raised, exc)
    if soft != resource.RLIM_INFINITY and soft < needed:
        fits = max(10, soft - RESERVED_FDS)
        LOG.warning(
            "[wsgi] connection_limit %d does not fit the open-file limit (RLIMIT_NOFILE "
            "%d, hard %s): holding at most %d connections; raise the hard limit "
            "(ulimit -Hn, LimitNOFILE= in systemd) to hold more",
            wanted,
            soft,
            hard,
            fits,
        )
        return fits
    return wanted


def create_server(conf: cfg.ConfigOpts, app: Any) -> Any:
    """The waitress server for ``app``, with the ``[wsgi]`` options applied.

    :param conf: the parsed configuration (``[api]``, ``[wsgi]``).
    :param app: the WSGI application.
    :returns: the server (not yet running).
    :raises OSError: cannot listen.
    """
    wsgi = conf.wsgi
    server_map: dict[int, Any] = {}
    server = waitress.create_server(
        app,
        map=server_map,
        host=conf.api.bind_host,
        port=conf.api.bind_port,
        threads=wsgi.threads,
        ident=PROG,
        clear_untrusted_proxy_headers=True,
        connection_limit=connection_limit(wsgi.connection_limit),
        channel_timeout=wsgi.client_socket_timeout,
        # NOTE: both timeouts are checked this often; a third of the shorter.
        cleanup_interval=max(1, min(wsgi.client_socket_timeout, wsgi.request_read_timeout) // 3),
        asyncore_use_poll=True,
    )
    _bound_reads(server_map, wsgi.request_read_timeout)
    return server


def _install_signal_handlers(conf: cfg.ConfigOpts) -> None:
    def _stop(signum: int, frame: FrameType | None) -> None:
        LOG.info("Caught %s, stopping", signal.Signals(signum).name)
        # NOTE: waitress's loop ends on SystemExit and lets the worker
        # threads finish the requests they hold.
        raise SystemExit(0)

    def _reload(signum: int, frame: FrameType | None) -> None:
        LOG.info("Caught SIGHUP, reloading mutable options")
        checks.reload_config(conf)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _reload)


def _listening(server: Any) -> list[tuple[str, int]]:
    # NOTE: a host name that resolves to several addresses gets one socket
    # each (waitress's MultiSocketServer); a single address, one server.
    listen = getattr(server, "effective_listen", None)
    if listen:
        return [(str(host), int(port)) for host, port in listen]
    return [(server.effective_host, server.effective_port)]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the API until SIGTERM or SIGINT.

    :param argv: the arguments, without the program name; ``sys.argv[1:]``
        when None.
    :returns: the exit code: 0 after a clean stop, 1 when it cannot start.
    :raises SystemExit: ``--help``, ``--version`` or a usage error (argparse).
    """
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, sys.argv[1:] if argv is None else list(argv), description=DESCRIPTION)
    logging.setup(conf, "resize_sched")
    try:
        deployment = deploy.load(conf)
    except (
        exception.ConfigurationError,
        messaging.MessagingException,
        sa.exc.ArgumentError,
    ) as exc:
        LOG.error("%s", exc)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        try:
            server = create_server(conf, deployment.app)
        except OSError as exc:
            LOG.error("Cannot listen on %s:%s: %s", conf.api.bind_host, conf.api.bind_port, exc)
            print(
                f"{PROG}: cannot listen on {conf.api.bind_host}:{conf.api.bind_port}: {exc}",
                file=sys.stderr,
            )
            return 1
        _install_signal_handlers(conf)
        for host, port in _listening(server):
            LOG.info("%s serving the Compute API at http://%s:%s/v2.1", PROG, host, port)
        if not conf.api.compute_link_prefix:
            LOG.warning(
                "[api] compute_link_prefix is not set: links are built from each "
                "request's Host header. Set it in production."
            )
        server.run()
        server.close()
        LOG.info("%s stopped", PROG)
        return 0
    finally:
        deployment.close()


if __name__ == "__main__":
    sys.exit(main())
