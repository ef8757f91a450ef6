"""The oslo.middleware filters in front of the API, each configured in its own group.

Outermost first::

    RequestId            x-openstack-request-id (and Nova's x-compute-request-id)
                         on every response; the id in environ is the one
                         logged and put in the request context
    CORS                 [cors]
    HTTPProxyToWSGI      [oslo_middleware] enable_proxy_headers_parsing: the
                         scheme and host of links follow X-Forwarded-Proto/Host
    RequestBodySizeLimiter  [oslo_middleware] max_request_body_size: 413 over it
      -> the application (/healthcheck is :class:`HealthcheckApp`)

The request id is outermost (Nova puts CORS first) so that even a CORS
preflight or a 413 carries one. Every filter is handed our own ``ConfigOpts``
and registers its options there; nothing reads the global ``cfg.CONF``.
"""

from collections.abc import Callable, Iterable
from typing import Any

import webob
import webob.dec
import webob.exc
from oslo_config import cfg
from oslo_middleware import cors, healthcheck, http_proxy_to_wsgi, request_id, sizelimit

from resize_sched.api import faults
from resize_sched.api.request import CONTEXT_KEY

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: Where the health check is served (outside /v2.1, as Nova serves it).
HEALTHCHECK_PATH = "/healthcheck"


class ComputeRequestId(request_id.RequestId):
    """oslo.middleware's request id, also echoed as ``x-compute-request-id`` (as Nova)."""

    compat_headers = ["x-compute-request-id"]


def max_body_size(conf: cfg.ConfigOpts) -> int:
    """``[oslo_middleware] max_request_body_size``, registered on ``conf`` if it was not."""
    # NOTE: the very Opt objects the filter registers itself: no clash.
    conf.register_opts(sizelimit.OPTS, group="oslo_middleware")
    return int(conf.oslo_middleware.max_request_body_size)


def too_large_message(limit: int) -> str:
    """The message of a 413, from the filter or from the HTTP server."""
    return f"Request is too large (over max_request_body_size, {limit} bytes)."


class BodySizeLimiter(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's body size limit, refusing with a Compute-style 413 body.

    A ``Content-Length`` over the limit is refused before anything reads the
    body or asks who the caller is; a chunked body is cut at the limit
    while it is read. (waitress, which reads the body before calling us,
    applies the same limit itself: :mod:`resize_sched.api.server`.)
    """

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> Any:
        try:
            return super().__call__(req)
        except webob.exc.HTTPRequestEntityTooLarge:
            limit = self._conf_get("max_request_body_size")
            return faults.error_response(413, too_large_message(limit))


class _PlainHealthcheck(healthcheck.Healthcheck):
    """The health check without details, whatever ``[healthcheck] detailed`` says."""

    def __init__(self, application: WSGIApp | None, conf: cfg.ConfigOpts) -> None:
        super().__init__(application, conf)
        # NOTE: read once at start by the parent; its responses consult it.
        self._show_details = False


def _not_found(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    return faults.error_response(404, "The resource could not be found.")(environ, start_response)


class HealthcheckApp:
    """``/healthcheck``: oslo.middleware's health check, configured in ``[healthcheck]``.

    Anyone gets the plain answer (200, or 503 when a backend such as
    ``disable_by_file`` says so), without credentials, for load balancers. With
    ``[healthcheck] detailed = True`` a caller whom the API authenticates as
    an administrator (``context_is_admin``) gets the detailed one; a request
    carrying credentials goes through the same authentication as the API.

    :param conf: our parsed configuration.
    :param wrap_auth: puts the configured authentication in front of an app.
    """

    def __init__(self, conf: cfg.ConfigOpts, wrap_auth: Callable[[WSGIApp], WSGIApp]) -> None:
        self.plain = _PlainHealthcheck(_not_found, conf)
        self.detailed = healthcheck.Healthcheck(_not_found, conf)
        self.details_allowed = bool(conf.healthcheck.detailed)
        self._authenticated = wrap_auth(self._by_caller)

    def _by_caller(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        ctxt = environ.get(CONTEXT_KEY)
        check = self.detailed if ctxt is not None and ctxt.is_admin else self.plain
        return check(environ, start_response)

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        credentials = environ.get("HTTP_X_AUTH_TOKEN")
        if credentials and self.details_allowed:
            return self._authenticated(environ, start_response)
        return self.plain(environ, start_response)


def pipeline(conf: cfg.ConfigOpts, app: WSGIApp) -> WSGIApp:
    """Put the oslo.middleware filters in front of ``app``.

    :param conf: our parsed configuration; each filter registers its options
        on it (``[cors]``, ``[oslo_middleware]``).
    :param app: the application.
    :returns: the wrapped application.
    """
    wrapped: Any = BodySizeLimiter(app, conf)
    wrapped = http_proxy_to_wsgi.HTTPProxyToWSGI(wrapped, conf)
    wrapped = cors.CORS(wrapped, conf)
    return ComputeRequestId(wrapped, conf)
