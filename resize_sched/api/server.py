"""The HTTP server of ``resize-sched-api`` and of the all-in-one: waitress, hardened.

One factory, :func:`create_server`, for both. Connections are held by
waitress's event loop, not by threads: a client still sending its request,
or idle between requests, costs a socket and no thread. The loop uses
``poll()`` (waitress's default, ``select()``, cannot watch a descriptor
numbered past 1023), holds up to ``[wsgi] connection_limit`` connections
(waitress's own default, 100, let 110 slow clients stop the API), closes a
connection silent for ``[wsgi] client_socket_timeout`` and one whose request
is not all in after ``[wsgi] request_read_timeout``, however steadily it
trickles.

waitress reads a whole request body (into a temporary file past 512 KiB)
before the application sees the request. Its own body limit is set from
``[oslo_middleware] max_request_body_size``, so that a body announced larger
(``Content-Length``) is refused at once and a chunked one as soon as it
passes the limit, before any of it is stored. The requests waitress itself
refuses (too large, malformed) are answered as the API answers: a
Compute-style JSON body and a request id.
"""

import errno
import resource
import time
import uuid
from typing import Any

import waitress
from oslo_config import cfg
from oslo_log import log as logging
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer
from waitress.task import ErrorTask

from resize_sched.api import faults, middleware

LOG = logging.getLogger(__name__)

#: File descriptors kept beside the client connections: the listening
#: sockets, waitress's wake-up pipe, database and broker connections, logs.
RESERVED_FDS = 128


class FaultTask(ErrorTask):
    """waitress's answer to a request it refuses, as a Compute-style error.

    The request never reached the application, so no filter gave it a
    request id: one is made here, logged and sent in the same headers.
    """

    def execute(self) -> None:
        error = self.request.error
        request_id = f"req-{uuid.uuid4()}"
        if error.code == 413:
            limit = self.channel.server.adj.max_request_body_size - 1
            message = middleware.too_large_message(limit)
        else:
            message = f"{error.reason}: {error.body}."
        LOG.info("Request %s refused (%s) by the HTTP server: %s", request_id, error.code, message)
        response = faults.error_response(error.code, message)
        body = response.body
        self.status = response.status
        self.response_headers.extend(
            [
                ("Content-Type", response.content_type),
                ("x-openstack-request-id", request_id),
                ("x-compute-request-id", request_id),
            ]
        )
        # NOTE: the rest of the request (a body refused unread) is never
        # read: the connection closes after this answer.
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class ReadTimedChannel(HTTPChannel):
    """waitress's channel, noting when the request it is receiving began."""

    error_task_class = FaultTask

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


class ListenError(Exception):
    """The server cannot listen where it is told to; the message says where and why.

    :param host: the address.
    :param port: the port.
    :param options: the options that name them (``[api] bind_host, bind_port``).
    :param cause: the error of ``bind()``.
    """

    def __init__(self, host: str, port: int, options: str, cause: OSError) -> None:
        self.host = host
        self.port = port
        self.cause = cause
        if cause.errno == errno.EADDRINUSE:
            why = "the port is already in use (another process listens there)"
        elif cause.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges)"
        elif cause.errno == errno.EADDRNOTAVAIL:
            why = "no interface of this machine has that address"
        else:
            why = cause.strerror or str(cause)
        super().__init__(f"cannot listen on {host}:{port} ({options}): {why}")


def create_server(
    conf: cfg.ConfigOpts,
    app: Any,
    *,
    ident: str,
    host: str | None = None,
    port: int | None = None,
    options: str = "[api] bind_host, bind_port",
) -> Any:
    """The waitress server for ``app``, with the ``[wsgi]`` options applied.

    :param conf: the parsed configuration (``[api]``, ``[wsgi]``,
        ``[oslo_middleware]``).
    :param app: the WSGI application.
    :param ident: the server's name in its answers and logs.
    :param host: where to listen; ``[api] bind_host`` when None.
    :param port: the port; ``[api] bind_port`` when None.
    :param options: the options ``host`` and ``port`` come from, for the
        message of a :class:`ListenError`.
    :returns: the server (not yet running).
    :raises ListenError: cannot listen.
    """
    wsgi = conf.wsgi
    host = conf.api.bind_host if host is None else host
    port = conf.api.bind_port if port is None else port
    server_map: dict[int, Any] = {}
    try:
        server = waitress.create_server(
            app,
            map=server_map,
            host=host,
            port=port,
            threads=wsgi.threads,
            ident=ident,
            clear_untrusted_proxy_headers=True,
            connection_limit=connection_limit(wsgi.connection_limit),
            channel_timeout=wsgi.client_socket_timeout,
            # NOTE: both timeouts are checked this often; a third of the shorter.
            cleanup_interval=max(
                1, min(wsgi.client_socket_timeout, wsgi.request_read_timeout) // 3
            ),
            # NOTE: waitress refuses a body of this size or more; ours, over it.
            max_request_body_size=middleware.max_body_size(conf) + 1,
            asyncore_use_poll=True,
        )
    except OSError as exc:
        raise ListenError(host, port, options, exc) from exc
    _bound_reads(server_map, wsgi.request_read_timeout)
    return server


def listening(server: Any) -> list[tuple[str, int]]:
    """Every address and port ``server`` listens on."""
    # NOTE: a host name that resolves to several addresses gets one socket
    # each (waitress's MultiSocketServer); a single address, one server.
    listen = getattr(server, "effective_listen", None)
    if listen:
        return [(str(host), int(port)) for host, port in listen]
    return [(server.effective_host, server.effective_port)]
