"""Placement's error answers mapped to the typed errors of :mod:`resize_sched.exception`.

Nothing above the client sees a status code: a 409 is a generation conflict
(re-read and retry), a capacity refusal (try the next alternate) or another
conflict; a 5xx is Placement being unavailable (keystoneauth has retried).
"""

from typing import Any

from resize_sched import exception

CONCURRENT_UPDATE = "placement.concurrent_update"
_CAPACITY_REFUSED = "Unable to allocate inventory"


def parse_error(response: Any) -> tuple[str, str]:
    """Return Placement's (error code, detail) from an error response.

    The detail loses the generic title webob puts in front of it.
    """
    try:
        error = response.json()["errors"][0]
        code, detail = error.get("code") or "", error.get("detail") or ""
    except (ValueError, KeyError, IndexError, TypeError):
        code, detail = "", response.text or ""
    _title, sep, rest = detail.partition("\n\n")
    return code, " ".join((rest if sep else detail).split())


def error_for(method: str, url: str, status: int, code: str, detail: str) -> Exception:
    """Map one failed answer to the typed error the caller should see."""
    info = {"method": method, "url": url, "status": status, "placement_code": code}
    if status >= 500:
        return exception.PlacementUnavailable(reason=f"HTTP {status} ({code}): {detail}", **info)
    if status == 409:
        if code == CONCURRENT_UPDATE:
            return exception.ConsumerGenerationConflict(detail=detail, **info)
        if _CAPACITY_REFUSED in detail:
            return exception.ClaimRefused(detail=f"{detail} ({method} {url})", **info)
        return exception.PlacementConflict(detail=detail, **info)
    if status == 404:
        return exception.PlacementNotFound(what=f"{url} ({method}, {code})", detail=detail, **info)
    if status == 400:
        return exception.PlacementBadRequest(detail=f"{detail} ({code})", **info)
    return exception.PlacementError(
        reason=f"{method} {url} answered HTTP {status} ({code}): {detail}", **info
    )
