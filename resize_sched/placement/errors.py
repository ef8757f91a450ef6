"""Placement's error answers mapped to the typed errors of :mod:`resize_sched.exception`.

Nothing above the client sees a status code: a 409 is a generation conflict
(re-read and retry), a capacity refusal (try the next alternate) or another
conflict; a 5xx is Placement being unavailable (keystoneauth has retried).

Each error carries what an operator needs to read it: Placement's own words
(the ``detail`` of its error document, without the generic title webob puts
in front of it) and the request as ``METHOD /path?query`` relative to
Placement's endpoint, its query decoded (:func:`shown_request`). Whether
asking again can succeed is :attr:`resize_sched.exception.PlacementError.permanent`,
decided there from the class, the status and Placement's error code.
"""

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from resize_sched import exception

CONCURRENT_UPDATE = exception.PlacementError.CONCURRENT_UPDATE
_CAPACITY_REFUSED = "Unable to allocate inventory"
#: Placement's code when it has none more precise: not worth quoting.
_UNDEFINED = "placement.undefined_code"
_TAG = re.compile(r"<[^>]*>")
#: The most of a non-JSON answer quoted (an HTML page from a proxy).
_MAX_TEXT = 200


def parse_error(response: Any) -> tuple[str, str]:
    """Return Placement's (error code, detail) from an error response.

    The detail loses the generic title webob puts in front of it; an error
    without a detail gives its title. An answer that is not Placement's JSON
    (a proxy's page) gives its text without markup, cut short, or the
    status's reason phrase.
    """
    try:
        error = response.json()["errors"][0]
        code = error.get("code") or ""
        detail = error.get("detail") or error.get("title") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        text = " ".join(_TAG.sub(" ", response.text or "").split())
        if len(text) > _MAX_TEXT:
            text = text[: _MAX_TEXT - 3].rstrip() + "..."
        return "", text or (getattr(response, "reason", None) or "")
    _title, sep, rest = str(detail).partition("\n\n")
    return code, " ".join((rest if sep else str(detail)).split())


def shown_request(path: str, url: str | None = None) -> str:
    """The request's path as an operator reads it: relative to Placement's
    endpoint, with the query (taken from ``url``, the address the answer
    came from, when ``path`` has none) decoded: ``/allocation_candidates?
    resources=VCPU:2,MEMORY_MB:1024&limit=1000``.

    :param path: the path asked for, or a whole URL when nothing better is known.
    :param url: the full address answered, for its query.
    """
    split = urlsplit(path)
    query = split.query or (urlsplit(url).query if url else "")
    shown = split.path or "/"
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        shown += "?" + "&".join(f"{name}={value}" for name, value in pairs)
    return shown


def _code(code: str) -> str:
    """Placement's error code, as a clause to quote (none for the undefined one)."""
    return "" if code in ("", _UNDEFINED) else f" ({code})"


def error_for(
    method: str, url: str, status: int, code: str, detail: str, *, path: str | None = None
) -> Exception:
    """Map one failed answer to the typed error the caller should see.

    :param url: the address answered (for its query, and its path when
        ``path`` is not given).
    :param path: the path asked for, relative to Placement's endpoint.
    """
    shown = shown_request(path or url, url)
    info = {"method": method, "url": shown, "status": status, "placement_code": code}
    if status >= 500:
        return exception.PlacementUnavailable(
            reason=f"HTTP {status}{_code(code)}: {detail}", detail=detail, **info
        )
    if status == 409:
        if code == CONCURRENT_UPDATE:
            return exception.ConsumerGenerationConflict(detail=detail, **info)
        if _CAPACITY_REFUSED in detail:
            return exception.ClaimRefused(detail=detail, **info)
        return exception.PlacementConflict(detail=detail, **info)
    if status == 404:
        return exception.PlacementNotFound(what=f"{method} {shown}", detail=detail, **info)
    if status == 400:
        return exception.PlacementBadRequest(detail=detail, **info)
    return exception.PlacementError(
        reason=f"{method} {shown} answered HTTP {status}{_code(code)}: {detail}",
        detail=detail,
        **info,
    )
