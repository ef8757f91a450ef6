"""What every message is made of: a compute reason without its code, host
names for provider UUIDs, Placement's own words with the request it refused,
and what kind of refusal that was.
"""

import re
from collections.abc import Mapping

from resize_sched import exception

_CODE = re.compile(r"\s*\[[a-z0-9_.]+\]\s*$")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
#: A UUID in words (not in a request's path or query), with Placement's
#: ``resource provider '...'`` around it when it has it.
_NAMED = re.compile(rf"(?:resource provider\s+)?(?P<q>'?)(?<![/=:,\w-])(?P<uuid>{_UUID})(?P=q)")
#: What takes on again what a transient Placement failure left in flight.
_SWEEP = "the conductor's sweep, once the {move} has not moved for [conductor] stuck_after seconds"

#: The compute service log, named in the advice on a host's failure.
_LOG = "the resize-sched-compute log on {host}"


def reason_of(reason: str) -> str:
    """A reason as a compute host reported it, without the error code it ends
    with (``... [resize_sched.compute.injected_failure]``) or its last full stop."""
    return _CODE.sub("", reason).strip().rstrip(".")


def named(
    text: str,
    hosts: Mapping[str | None, str | None],
    consumers: Mapping[str | None, str] | None = None,
) -> str:
    """``text`` with each provider UUID of ``hosts`` (UUID to host name)
    replaced by ``host NAME`` (with Placement's ``resource provider '...'``
    around it), each consumer UUID of ``consumers`` (UUID to what it is:
    ``server``, ``migration``) by ``the server UUID``, and any other UUID by
    ``another provider or consumer``. A UUID in a request's path or query
    (after ``/``, ``=``, ``:`` or ``,``) is left as it is: the path is
    quoted exactly."""
    known = consumers or {}

    def _name(found: re.Match[str]) -> str:
        uuid = found.group("uuid").lower()
        host = hosts.get(uuid)
        if host:
            return f"host {host}"
        if uuid in known:
            return f"the {known[uuid]} {uuid}"
        return "another provider or consumer"

    return _NAMED.sub(_name, text)


def _flavor(flavor: Mapping[str, object] | None) -> str:
    name = (flavor or {}).get("name") or (flavor or {}).get("id")
    return f"flavor {name}" if name else "the new flavor"


def _placement_request(exc: exception.PlacementError) -> str:
    """The request Placement failed, as ``METHOD /path?query`` (empty when unknown)."""
    method, url = exc.kwargs.get("method"), exc.kwargs.get("url")
    return f"{method} {url}" if method and url else ""


def _placement_said(
    exc: exception.PlacementError,
    hosts: Mapping[str | None, str | None],
    consumers: Mapping[str | None, str] | None = None,
) -> str:
    """Placement's own words, providers and consumers named, and the request."""
    said = named(exc.placement_words.rstrip("."), hosts, consumers)
    request = _placement_request(exc)
    return f"{said} ({request})" if request else said


def _placement_fix(exc: exception.PlacementError, again: str) -> str:
    """What to do about a permanent refusal, then ``again``."""
    if isinstance(exc, exception.ClaimRefused):
        return (
            "Free room on that host, or choose a flavor its inventory allows "
            f"(max_unit, step_size), then {again}."
        )
    if isinstance(exc, exception.PlacementBadRequest):
        return (
            "Fix what it names (usually a flavor's extra specs: a resource class or trait "
            f"Placement does not know), then {again}."
        )
    return f"Fix what it names, then {again}; the Placement log says more."


def placement_refusal(exc: Exception) -> str:
    """What kind of refusal Placement's answer is, from its own words:
    ``capacity`` (the amount does not fit beside what is used), ``constraints``
    (it breaks the inventory's ``min_unit``, ``max_unit`` or ``step_size``)
    or ``other``."""
    text = str(exc)
    if "violate inventory constraints" in text:
        return "constraints"
    if "exceed the capacity" in text or isinstance(exc, exception.ClaimRefused):
        return "capacity"
    return "other"
