"""A shelve's, an offload's and an unshelve's failures in words."""

from collections.abc import Mapping

from resize_sched import exception
from resize_sched.words.base import (
    _LOG,
    _flavor,
    _placement_fix,
    _placement_said,
    reason_of,
)


def unshelve_placement_failed(exc: exception.PlacementError) -> str:
    """Placement failed an unshelve's claim; what the server may have held
    was given back and it stays SHELVED_OFFLOADED (nothing retries it)."""
    said = _placement_said(exc, {})
    if exc.permanent:
        return (
            f"Unshelving the server was refused by Placement: {said}. Nothing retries it: "
            "the server is SHELVED_OFFLOADED and holds nothing. "
            + _placement_fix(exc, "unshelve it again")
        )
    status = exc.kwargs.get("status")
    what = f"Placement answered HTTP {status}" if status else "Placement did not answer"
    return (
        f"{what} while unshelving the server: {said}. Nothing retries "
        "it: the server is SHELVED_OFFLOADED and holds nothing. Unshelve it again once "
        "Placement answers."
    )


def no_host_for_unshelve(exc: exception.NoValidHost, flavor: object, group: object = None) -> str:
    """An unshelve of an offloaded server found no host (or every claim was refused)."""
    what = _flavor(flavor if isinstance(flavor, Mapping) else None)
    member = ""
    policy = getattr(group, "policy", None)
    if policy in ("affinity", "anti-affinity"):
        member = (
            f" It is a member of server group {getattr(group, 'uuid', '')} ({policy}), "
            "whose policy limits the hosts it may go to."
        )
    todo = (
        "No host can hold its flavor: delete it, or unshelve it again once an "
        "administrator has added a host that can."
        if exc.kind == exception.NoValidHost.INFEASIBLE
        else "Unshelve it again when room is freed (or in another availability zone)."
    )
    return (
        f"No host could take the unshelved server with {what} ({exc.kind}): "
        f"{exc.reason}.{member} The server stays SHELVED_OFFLOADED and holds nothing. {todo}"
    )


def shelve_step_failed(
    operation: str, host: str | None, reason: str, *, offloaded: bool = True
) -> str:
    """A compute host failed a shelve's, an offload's or an unshelve's part.

    :param operation: ``shelve``, ``shelve_offload`` or ``unshelve``.
    :param offloaded: (an unshelve) the server was offloaded, its claim given back.
    """
    where = host or "its host"
    why = reason_of(reason)
    log = _LOG.format(host=where)
    if operation == "shelve":
        return (
            f"Shelving the server on host {where} failed: {why}. It was not shelved: it "
            f"keeps its state and its room there. Check {log}, then shelve it again."
        )
    if operation == "shelve_offload":
        return (
            f"Offloading the shelved server from host {where} failed: {why}. It stays "
            f"SHELVED on host {where}, holding its room there. Check {log}, then offload "
            "it again (shelveOffload)."
        )
    if not offloaded:
        return (
            f"Unshelving the server on host {where} failed: {why}. It stays SHELVED on "
            f"host {where}, holding its room there. Check {log}, then unshelve it again."
        )
    return (
        f"Unshelving the server on host {where} failed: {why}. It is SHELVED_OFFLOADED "
        f"and holds nothing. Check {log}, then unshelve it again."
    )
