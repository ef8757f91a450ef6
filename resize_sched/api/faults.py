"""HTTP errors of the API, and the one place domain errors become them.

Handlers raise either a :class:`Fault` (an HTTP-level refusal: bad body,
admin only...) or let a domain error from :mod:`resize_sched.exception`
through; :func:`to_response` turns both into a Compute-style body such as
``{"itemNotFound": {"code": 404, "message": "..."}}``. Anything else is a bug:
it is logged with its traceback and answered with a 500 ``computeFault``
that names the request id, never the exception text.
"""

import json

import webob
import webob.exc
from oslo_log import log as logging

from resize_sched import exception

LOG = logging.getLogger(__name__)

#: The body key of each status, as Nova names them; others use ``computeFault``.
FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    501: "notImplemented",
    503: "serviceUnavailable",
}
DEFAULT_NAME = "computeFault"


class Fault(Exception):
    """An HTTP error answer; a subclass names its status: ``(Fault, status=404)``.

    :param message: shown to the client.
    :param headers: extra response headers.
    """

    status = 500

    def __init_subclass__(cls, status: int | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status

    def __init__(self, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = list(headers or [])


class BadRequest(Fault, status=400):
    """The request itself is wrong."""


class Unauthorized(Fault, status=401):
    """No (valid) credentials."""


class Forbidden(Fault, status=403):
    """The caller may not do this."""


class NotFound(Fault, status=404):
    """No such resource (or not the caller's)."""


class MethodNotAllowed(Fault, status=405):
    """The path exists, the method does not."""


class NotAcceptable(Fault, status=406):
    """A microversion we do not serve."""


class Conflict(Fault, status=409):
    """The resource is not in a state that allows it."""


class ServiceUnavailable(Fault, status=503):
    """A service we depend on (Keystone's limits) did not answer."""


class RequestTooLarge(Fault, status=413):
    """The body is too large to read."""


class UnsupportedMediaType(Fault, status=415):
    """A body that is not JSON."""


def over_quota_message(resource: str, requested: int | str, used: int, limit: int) -> str:
    """Nova's TooManyInstances message (``requested`` may be ``min-max``)."""
    return (
        f"Quota exceeded for {resource}: Requested {requested}, "
        f"but already used {used} of {limit} {resource}"
    )


def from_domain(exc: exception.ResizeSchedException) -> Fault | None:
    """The HTTP error a domain error means at the edge, if it has one.

    :param exc: a domain error.
    :returns: the fault, or None for errors that are our fault (a 500).
    """
    if isinstance(exc, exception.NotFound):
        return NotFound(exc.message)
    if isinstance(exc, exception.Invalid):
        return BadRequest(exc.message)
    if isinstance(exc, exception.Conflict):
        return Conflict(exc.message)
    if isinstance(exc, exception.OverQuota):
        # NOTE: Nova's TooManyInstances message, on create and resize alike.
        found = exc.kwargs
        return Forbidden(
            over_quota_message(
                found["resource"], found["requested"], found["used"], found["limit"]
            )
        )
    if isinstance(exc, exception.LimitsUnavailable):
        # NOTE: why is in the log; the caller is not told where Keystone is.
        return ServiceUnavailable(
            "The quota limits could not be read from the identity service (Keystone). "
            "Try again later."
        )
    if isinstance(exc, exception.ProjectRequired):
        return Forbidden("This API takes project-scoped tokens only.")
    return None


def error_response(
    status: int, message: str, headers: list[tuple[str, str]] | None = None
) -> webob.Response:
    """A Compute-style error response.

    :param status: the HTTP status.
    :param message: the message in the body.
    :param headers: extra headers.
    :returns: the response.
    """
    name = FAULT_NAMES.get(status, DEFAULT_NAME)
    body = {name: {"code": status, "message": message}}
    response = webob.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        charset=None,
    )
    for key, value in headers or []:
        response.headers[key] = value
    return response


def to_response(exc: BaseException, request_id: str) -> webob.Response:
    """Answer a failed request.

    :param exc: what the handler raised.
    :param request_id: the request's id, for the log and the 500 message.
    :returns: the error response.
    """
    fault: Fault | None = None
    if isinstance(exc, Fault):
        fault = exc
    elif isinstance(exc, exception.ResizeSchedException):
        fault = from_domain(exc)
    elif isinstance(exc, webob.exc.HTTPClientError):
        # NOTE: raised by WebOb or a filter while the handler read the request
        # (oslo.middleware's size limit, reading a chunked body).
        fault = Fault(exc.explanation or exc.title)
        fault.status = exc.code
    if fault is not None:
        LOG.info("Request %s refused (%s): %s", request_id, fault.status, fault.message)
        return error_response(fault.status, fault.message, fault.headers)
    LOG.error("Request %s failed unexpectedly", request_id, exc_info=exc)
    return error_response(
        500,
        f"Unexpected API Error ({type(exc).__name__}); the resize-sched-api log has "
        f"the details under request {request_id}.",
    )
