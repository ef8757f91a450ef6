"""A confirm's or revert's failures in words: refused by Placement (its reason,
the refused host, what the resize still holds, when it is tried again) or
unanswered.
"""

from collections.abc import Mapping

from resize_sched import exception
from resize_sched.words.base import (
    _placement_said,
    named,
    placement_refusal,
)


def decision_unanswered(decision: str, host: str) -> str:
    """Placement did not answer a confirm's or revert's allocation change, twice."""
    doing = "confirm" if decision == "confirm" else "revert"
    return (
        f"Placement did not answer the {doing} of the resize on host {host}, twice. The "
        f"{doing} stays in progress and the conductor's sweep completes it once "
        "Placement answers. Check that Placement is up; nothing else is needed."
    )


def decision_refused(
    decision: str,
    host: str,
    exc: Exception,
    hosts: Mapping[str | None, str | None],
    *,
    running_on: str | None = None,
    holds: str = "",
    retried: bool = True,
) -> str:
    """Placement refused the allocation change of a confirm or revert.

    Placement's own reason is quoted (host names for its provider UUIDs),
    and said in words by what it is (:func:`placement_refusal`): a lack of
    room, or an inventory that no longer admits the flavor.

    :param host: the host whose allocation Placement refused (the source
        for a revert, the server's host for a confirm).
    :param hosts: the resize's providers (UUID to host name), for Placement's words.
    :param running_on: the host the server runs on in VERIFY_RESIZE.
    :param holds: what the resize still holds, in words (see :func:`held_by_resize`).
    :param retried: the conductor's sweep tries the decision again once the
        host's inventory or usage changes.
    """
    doing = "Confirming" if decision == "confirm" else "Reverting"
    flavor = "old" if decision == "revert" else "new"
    why = {
        "capacity": f"host {host} has not enough room left for the {flavor} flavor",
        "constraints": (
            f"host {host}'s inventory no longer admits the {flavor} flavor "
            "(an amount is above its max_unit, below its min_unit or off its step_size)"
        ),
    }.get(placement_refusal(exc), f"Placement refused the change on host {host}")
    detail = (
        _placement_said(exc, hosts)
        if isinstance(exc, exception.PlacementError)
        else named(str(exc).rstrip("."), hosts)
    )
    where = f" on host {running_on}" if running_on else ""
    held = f", holding {holds}" if holds else ""
    if retried:
        then = (
            f"Free room on host {host} or give back its inventory: the conductor's sweep "
            f"tries the {decision} again by itself once host {host}'s inventory or usage "
            f"changes. Or {_other(decision)} the resize instead."
        )
    else:
        then = f"Retry the {decision}; if it is refused again, check the Placement log."
    return (
        f"{doing} the resize was refused: {why}. Placement said: {detail}. Nothing changed: "
        f"the server stays in VERIFY_RESIZE{where}{held}. {then}"
    )


def _other(decision: str) -> str:
    return "revert" if decision == "confirm" else "confirm"


def held_by_resize(
    server: Mapping[str, Mapping[str, int]],
    migration: Mapping[str, Mapping[str, int]],
    hosts: Mapping[str | None, str | None],
) -> str:
    """What a resize in VERIFY_RESIZE holds, in words: the server's and the
    migration's allocations, provider by provider, host names for UUIDs."""

    def of(allocations: Mapping[str, Mapping[str, int]]) -> str:
        parts = []
        for rp, res in sorted(allocations.items()):
            amounts = ", ".join(f"{rc} {n}" for rc, n in sorted(res.items()) if n)
            name = hosts.get(rp)
            parts.append(f"{amounts} on {f'host {name}' if name else f'provider {rp}'}")
        return "; ".join(parts) or "nothing"

    text = f"the server {of(server)}"
    if migration:
        text += f" and the migration {of(migration)}"
    return text
