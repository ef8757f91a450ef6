"""The request object handlers see, and the small helpers every handler uses.

:class:`ApiRequest` adds to WebOb's request what the outer layers found out:
the caller (:attr:`ApiRequest.context`, set by :mod:`resize_sched.api.auth`),
the microversion (:attr:`ApiRequest.version`), the decoded and validated
body (:meth:`ApiRequest.validated_body`) and links back to us.
"""

import datetime
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import webob
from oslo_middleware import request_id

from resize_sched.api import faults, schemas
from resize_sched.api.microversion import MIN_VERSION, APIVersion
from resize_sched.context import RequestContext
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope

#: WSGI environ keys set by the outer layers.
CONTEXT_KEY = "resize_sched.context"
VERSION_KEY = "resize_sched.api_version"
#: ``[api] compute_link_prefix``, when set (put there by the application).
LINK_PREFIX_KEY = "resize_sched.link_prefix"
#: Where oslo.middleware's RequestId puts the id it made (and the one we log).
REQUEST_ID_KEY = request_id.ENV_REQUEST_ID

#: The path prefix of the versioned API.
PREFIX = "/v2.1"

#: The largest body read, as Nova's default ``max_request_body_size``.
MAX_BODY_BYTES = 114688

#: The deepest nesting of arrays and objects a body may have; none of our
#: schemas goes past 4, and a deeper one would only cost recursion.
MAX_BODY_DEPTH = 32

_JSON_TYPES = ("", "application/json")
_TRUE = ("1", "t", "true", "on", "y", "yes")
_FALSE = ("0", "f", "false", "off", "n", "no")


class ApiRequest(webob.Request):
    """A Compute API request."""

    @property
    def context(self) -> RequestContext:
        """Who is asking (set by the auth middleware).

        :raises faults.Unauthorized: no middleware identified the caller.
        """
        ctxt = self.environ.get(CONTEXT_KEY)
        if ctxt is None:
            raise faults.Unauthorized("Authentication required")
        return ctxt

    @property
    def version(self) -> APIVersion:
        """The microversion this request is served at."""
        return self.environ.get(VERSION_KEY, MIN_VERSION)

    @property
    def request_id(self) -> str:
        """The id tying this request's logs together."""
        return self.environ.get(REQUEST_ID_KEY, "-")

    def project_scope(self) -> ProjectScope:
        """The project whose servers the caller may see.

        :returns: :data:`~resize_sched.db.project_scope.ALL_PROJECTS` for an
            administrator, else the caller's project (a caller without one
            never gets here; the database refuses a None if it did).
        """
        return ALL_PROJECTS if self.context.is_admin else self.context.project_id  # type: ignore[return-value]

    def validated_body(self, schema: dict[str, Any]) -> Any:
        """The JSON body, checked against ``schema``.

        :param schema: a schema from :mod:`resize_sched.api.schemas`.
        :returns: the decoded body.
        :raises faults.UnsupportedMediaType: a body that is not JSON.
        :raises faults.RequestTooLarge: over :data:`MAX_BODY_BYTES`.
        :raises faults.BadRequest: malformed JSON, or a body the schema refuses.
        """
        if (self.content_length or 0) > MAX_BODY_BYTES:
            raise faults.RequestTooLarge(f"Request is too large (over {MAX_BODY_BYTES} bytes).")
        if self.content_type not in _JSON_TYPES:
            raise faults.UnsupportedMediaType(
                f"Unsupported Content-Type {self.content_type!r}; send application/json."
            )
        if not self.body:
            raise faults.BadRequest("The request body is empty; a JSON object is required.")
        try:
            # NOTE: decoded as UTF-8 here: json.loads of bytes would also take
            # UTF-16, UTF-32 and a BOM, which Nova refuses.
            body = json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise faults.BadRequest("Malformed request body: not valid JSON.") from None
        except RecursionError:
            raise faults.BadRequest(
                f"Malformed request body: nested deeper than {MAX_BODY_DEPTH} levels."
            ) from None
        check_json_shape(body)
        schemas.validate(body, schema)
        return body

    @property
    def base_url(self) -> str:
        """Where links start: ``[api] compute_link_prefix`` when set, else
        the URL the request came to (its ``Host`` header, which the client
        chose), each followed by the path the API is mounted at."""
        prefix = self.environ.get(LINK_PREFIX_KEY)
        if prefix:
            return prefix + self.script_name
        return self.application_url

    def link(self, *parts: str) -> str:
        """The versioned URL of a resource: ``.../v2.1/servers/ID``."""
        return "/".join([self.base_url + PREFIX, *parts])

    def bookmark(self, *parts: str) -> str:
        """The unversioned URL of a resource: ``.../servers/ID``."""
        return "/".join([self.base_url, *parts])

    def links(self, *parts: str) -> list[dict[str, str]]:
        """Nova's ``self`` and ``bookmark`` links of a resource."""
        return [
            {"rel": "self", "href": self.link(*parts)},
            {"rel": "bookmark", "href": self.bookmark(*parts)},
        ]


def check_json_shape(body: Any, max_depth: int = MAX_BODY_DEPTH) -> None:
    """Refuse a decoded body nested too deep, or with text UTF-8 cannot carry.

    JSON lets ``"\\ud800"`` through as a lone surrogate, which no database
    column (nor any response) can hold. Walked without recursion.

    :param body: the decoded JSON body.
    :param max_depth: the deepest nesting allowed.
    :raises faults.BadRequest: too deep, or a string (or key) with a lone
        surrogate.
    """
    pending: list[tuple[Any, int]] = [(body, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_text(value)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            raise faults.BadRequest(
                f"Malformed request body: nested deeper than {max_depth} levels."
            )
        if isinstance(value, dict):
            for key, item in value.items():
                _check_text(key)
                pending.append((item, depth + 1))
        else:
            pending.extend((item, depth + 1) for item in value)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise faults.BadRequest(
            "Malformed request body: a string is not valid Unicode (an unpaired surrogate)."
        ) from None


def json_response(body: Any, status: int = 200) -> webob.Response:
    """A JSON response.

    :param body: anything ``json.dumps`` takes.
    :param status: the HTTP status.
    :returns: the response.
    """
    return webob.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        charset=None,
    )


def empty_response(status: int) -> webob.Response:
    """A response without a body (202, 204).

    :param status: the HTTP status.
    :returns: the response.
    """
    response = webob.Response(status=status)
    del response.content_type
    response.content_length = 0
    return response


def isotime(value: datetime.datetime | None) -> str | None:
    """A time as servers show it: ``2026-11-02T10:00:00Z``."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def nova_timestamp(value: datetime.datetime | None) -> str | None:
    """A time as os-migrations shows it: ``2026-11-02T10:00:00.000000``."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def parse_bool(raw: str, name: str) -> bool:
    """A boolean query parameter's value (``true``/``1``/``yes``... or the opposite).

    :param raw: the value as sent.
    :param name: the parameter, for the message.
    :returns: the boolean.
    :raises faults.BadRequest: neither true nor false.
    """
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise faults.BadRequest(f"Invalid value {raw!r} for {name}; use true or false.")


def int_param(req: ApiRequest, name: str, *, minimum: int = 0) -> int | None:
    """An integer query parameter.

    :param req: the request.
    :param name: the parameter.
    :param minimum: the smallest value allowed.
    :returns: the value, or None when absent.
    :raises faults.BadRequest: not an integer, or below ``minimum``.
    """
    raw = req.GET.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise faults.BadRequest(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise faults.BadRequest(f"{name} must be at least {minimum}, got {value}")
    return value


def time_param(req: ApiRequest, name: str) -> datetime.datetime | None:
    """An ISO 8601 time query parameter (``changes-since``), as UTC.

    :returns: the time (a naive one taken as UTC), or None when absent.
    :raises faults.BadRequest: not an ISO 8601 time.
    """
    raw = req.GET.get(name)
    if raw is None:
        return None
    try:
        value = datetime.datetime.fromisoformat(raw.strip())
    except ValueError:
        raise faults.BadRequest(f"Invalid {name} {raw!r}: not an ISO 8601 time.") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return value


def changed_between(
    req: ApiRequest,
    items: list[Any],
    changed: Callable[[Any], datetime.datetime],
    *,
    since_from: str,
    reversed_message: str,
) -> list[Any]:
    """The items changed within ``changes-since`` (read from microversion
    ``since_from``) and ``changes-before`` (from 2.66), both bounds included.

    :param changed: when an item last changed.
    :param reversed_message: the 400's words when ``changes-before`` is
        earlier than ``changes-since`` (each resource words it as Nova's).
    :raises faults.BadRequest: a bad time, or the two the wrong way round.
    """
    since = time_param(req, "changes-since") if req.version.at_least(since_from) else None
    before = time_param(req, "changes-before") if req.version.at_least("2.66") else None
    if since is not None and before is not None and before < since:
        raise faults.BadRequest(reversed_message)
    if since is not None:
        items = [item for item in items if changed(item) >= since]
    if before is not None:
        items = [item for item in items if changed(item) <= before]
    return items


def paginate(
    req: ApiRequest, items: list[Any], key: str, collection: str
) -> tuple[list[Any], list[dict[str, str]]]:
    """Apply ``limit`` and ``marker`` (the ``key`` of the last item seen).

    :param req: the request, for its query parameters and URL.
    :param items: everything the caller may see, in order.
    :param key: the attribute markers name (``flavorid``, ``uuid``).
    :param collection: the path of the collection, for the ``next`` link.
    :returns: the page, and the ``*_links`` list (a ``next`` link when the
        page is full).
    :raises faults.BadRequest: a bad limit, or a marker not among ``items``.
    """
    # NOTE: as Nova, limit=0 is an empty page (and no next link).
    limit = int_param(req, "limit", minimum=0)
    marker = req.GET.get("marker")
    if marker is not None:
        keys = [str(getattr(item, key)) for item in items]
        if marker not in keys:
            raise faults.BadRequest(f"Marker {marker} could not be found.")
        items = items[keys.index(marker) + 1 :]
    if limit == 0:
        return [], []
    if limit is None or len(items) <= limit:
        return items, []
    page = items[:limit]
    params = {k: v for k, v in req.GET.items() if k != "marker"}
    params["marker"] = str(getattr(page[-1], key))
    href = f"{req.link(collection)}?{urllib.parse.urlencode(params)}"
    return page, [{"rel": "next", "href": href}]
