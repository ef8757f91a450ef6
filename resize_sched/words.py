"""Failures said in words: what an operator reads in a server's fault and events.

A failed step records a message where ``openstack server event show`` (the
event's ``traceback``) and ``openstack server show`` (the server's
``fault``) print it. Each function here writes one such message from what
the step knows: what happened, on which host (by name, never by provider
UUID), what state the server is left in, and what the operator can do. The
deferred and infeasible verdicts of the scheduler
(:mod:`resize_sched.scheduler.verdict`) give the reason the no-host
messages quote.
"""

import re
from collections.abc import Mapping, Sequence

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


def compute_failed(operation: str, host: str | None, reason: str, *, source: str | None) -> str:
    """A part a compute host runs failed there (``operation_failed``).

    :param operation: ``spawn``, ``prep_resize``, ``resize``,
        ``finish_resize``, ``confirm``, ``revert`` or ``finish_revert``.
    :param host: the host it failed on.
    :param reason: the host's reason.
    :param source: the resize's source host (where the server goes back to).
    """
    where = host or "its host"
    why = reason_of(reason)
    log = _LOG.format(host=where)
    source = source or "its source host"
    if operation == "spawn":
        return (
            f"Building the server failed on host {where}: {why}. The server is in ERROR "
            f"and holds nothing. Check {log}, then delete the server and create it again."
        )
    if operation == "prep_resize":
        return (
            f"Preparing the resize on host {where} failed: {why}. Other hosts are tried; "
            f"if none is left the server stays on host {source} with its old flavor. "
            f"Check {log}."
        )
    if operation in ("resize", "finish_resize"):
        part = "Moving the server off" if operation == "resize" else "Finishing the resize on"
        return (
            f"{part} host {where} failed: {why}. The server is in ERROR on host {source} "
            f"with its old flavor, and the resize holds nothing more. Check {log}, then "
            "delete the server or ask the cloud's administrator to repair it."
        )
    if operation == "confirm":
        return (
            f"Confirming the resize: cleaning up the server's old copy on host {where} "
            f"failed: {why}. The resize is confirmed and the server runs with its new "
            f"flavor; only that clean-up is left. Check {log}."
        )
    if operation == "finish_revert":
        return (
            f"Reverting the resize: starting the server again on host {where} failed: "
            f"{why}. Its allocation there is back to the old flavor. Check {log}."
        )
    if operation == "revert":
        return (
            f"Reverting the resize: stopping the server on host {where} failed: {why}. "
            f"The resize is reverted in Placement: the server holds its old flavor on host "
            f"{source} again. Check {log} (its copy there may still run)."
        )
    if operation in ("pre_live_migration", "live_migration"):
        part = (
            "Preparing the live migration on"
            if operation == "pre_live_migration"
            else "Handing the server over from"
        )
        return (
            f"{part} host {where} failed: {why}. The live migration was rolled back: the "
            f"server runs on host {source}, ACTIVE, holding there what it held before. "
            f"Check {log}, then migrate it again."
        )
    if operation == "live_migration_abort":
        return (
            f"The live migration was aborted on host {where}: the server runs on host "
            f"{source}, ACTIVE, holding there what it held before."
        )
    if operation == "rebuild":
        return (
            f"Rebuilding the evacuated server on host {where} failed: {why}. The server is "
            f"in ERROR on host {source}, holding there what it held before, and holds "
            f"nothing on host {where}. Check {log}, then evacuate it again."
        )
    if operation == "post_live_migration":
        return (
            f"Cleaning up host {where} after the live migration failed: {why}. The server "
            "already runs on its destination, which alone holds it; it is in ERROR until "
            f"checked. Check {log} (a copy may be left there), then reset its state."
        )
    return f"{operation} failed on host {where}: {why}. Check {log}."


def filtered_out(removed: Sequence[tuple[str, int]]) -> str:
    """Which scheduler filter removed how many hosts, as a clause to quote
    after the candidate count (empty when none removed any)."""
    if not removed:
        return ""
    return "; " + ", ".join(f"{name} removed {count}" for name, count in removed)


def _advice(kind: str, why: str, *, infeasible: str, deferred: str) -> str:
    """What to do after a no-host verdict: ``infeasible`` when no host could
    ever hold it, nothing when the scheduler's reason already says it will
    retry, else ``deferred``."""
    if kind == exception.NoValidHost.INFEASIBLE:
        return infeasible
    if "retry" in why.lower():
        return ""  # the verdict says it already
    return deferred


def no_host_for_resize(kind: str, why: str, new_flavor: object, source: str) -> str:
    """A resize found no host (a deferred or infeasible verdict).

    :param kind: the verdict, ``deferred`` or ``infeasible``.
    :param why: the scheduler's reason (and what failed before, if anything).
    """
    what = _flavor(new_flavor if isinstance(new_flavor, Mapping) else None)
    todo = _advice(
        kind,
        why,
        infeasible="Resize to a flavor some host can hold, or add a host that can hold it.",
        deferred="Retry the resize when room is freed.",
    )
    return (
        f"No host could take the resize to {what} ({kind}): {why}. The server "
        f"stays on host {source} with its old flavor. {todo}"
    ).strip()


def no_host_for_move(
    migration_type: str, kind: str, why: str, new_flavor: object, source: str
) -> str:
    """A move found no host: :func:`no_host_for_resize` for a resize, else
    the words of the move named by ``migration_type``."""
    if migration_type != "resize":
        return no_host_for_migration(kind, why, source)
    return no_host_for_resize(kind, why, new_flavor, source)


def no_host_for_migration(kind: str, why: str, source: str) -> str:
    """A cold migration found no host (a deferred or infeasible verdict)."""
    todo = _advice(
        kind,
        why,
        infeasible="Add a host that can hold its flavor, or migrate it to a named host that can.",
        deferred="Retry the migration when room is freed, or enable another host.",
    )
    return (
        f"No other host could take the server ({kind}): {why}. The server stays on "
        f"host {source}, as it was. {todo}"
    ).strip()


def decision_unanswered(decision: str, host: str) -> str:
    """Placement did not answer a confirm's or revert's allocation change, twice."""
    doing = "confirm" if decision == "confirm" else "revert"
    return (
        f"Placement did not answer the {doing} of the resize on host {host}, twice. The "
        f"{doing} stays in progress and the conductor's sweep completes it once "
        "Placement answers. Check that Placement is up; nothing else is needed."
    )


def no_host_for_build(exc: exception.NoValidHost, flavor: object, group: object = None) -> str:
    """A build found no host; ``group`` the server's
    :class:`~resize_sched.scheduler.request.GroupPolicy`, if it is in one."""
    what = _flavor(flavor if isinstance(flavor, Mapping) else None)
    if exc.kind == exception.NoValidHost.INFEASIBLE:
        todo = "Delete the server and create it with a flavor some host can hold."
    else:
        todo = "Delete the server and create it again when room is freed."
    member = ""
    policy = getattr(group, "policy", None)
    if policy in ("affinity", "anti-affinity"):
        limit = (
            "the hosts its other members are on"
            if policy == "anti-affinity"
            else ("every host but the one its other members are on")
        )
        member = (
            f" It is a member of server group {getattr(group, 'uuid', '')} ({policy}), "
            f"whose policy rules out {limit}."
        )
    return (
        f"No host could take the server with {what} ({exc.kind}): {exc.reason}.{member} The "
        f"server is in ERROR and holds nothing. {todo}"
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


def restore_refused(host: str, why: str) -> str:
    """The resize ended without a host, and even the old allocation could not be put back."""
    return (
        f"The resize ended ({why}), and putting the server's old allocation back on host "
        f"{host} was refused: other servers took that room meanwhile. The server still "
        f"runs on host {host} but holds nothing in Placement (needs_heal). Free room on "
        f"host {host} and it heals by itself: the conductor's sweep tries again every "
        "[conductor] stuck_after seconds (or run 'resize-sched-manage placement heal' once "
        "there is room)."
    )


#: What each recorded step of a move is, for :func:`step_failed` (``{move}``
#: is the move's name).
_STEPS = {
    "schedule": "choosing a host for the {move}",
    "reschedule": "choosing another host for the {move}",
    "confirm": "confirming the {move}",
    "revert": "reverting the {move}",
}
#: Each migration type (``migrations.migration_type``) as the words name it.
_MOVES = {"live-migration": "live migration"}


#: The steps whose Placement failure ends the move (the conductor puts the
#: server's old allocation back: ``MoveTask.placement_failed``).
_ENDING_STEPS = ("schedule", "reschedule")


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


def step_failed(
    step: str,
    exc: exception.PlacementError,
    source: str | None,
    hosts: Mapping[str | None, str | None],
    consumers: Mapping[str | None, str] | None = None,
    *,
    move: str = "resize",
) -> str:
    """A conductor step of a move failed on Placement, and said nothing more itself.

    A permanent refusal (:attr:`~resize_sched.exception.PlacementError.permanent`)
    is said to end the move for good, quoting Placement; a transient failure
    says what takes it on again, and when.

    :param step: the step (``schedule``, ``reschedule``, ``confirm``, ``revert``...).
    :param source: the move's source host.
    :param hosts: the move's providers (UUID to host name).
    :param consumers: the move's consumers (UUID to ``server`` or ``migration``).
    :param move: the migration's type (``resize``, ``migration``,
        ``live-migration``, ``evacuation``).
    """
    name = _MOVES.get(move, move)
    doing = _STEPS.get(step, "the {move}'s " + step + " step").format(move=name)
    where = f"host {source or 'its host'}"
    said = _placement_said(exc, hosts, consumers)
    ends = step in _ENDING_STEPS
    kept = "with its old flavor" if move == "resize" else "as it was"
    if exc.permanent:
        what = "Placement refused a request"
        if ends:
            after = (
                f"Asking again cannot succeed, so nothing retries it: the {name} ended and "
                f"the server stays on {where} {kept}. "
                + _placement_fix(exc, f"ask for the {name} again")
            )
        else:
            after = (
                f"The {name} stays as it was; {_SWEEP.format(move=name)}, asks again, "
                "and is refused the same way until that is fixed. "
                + _placement_fix(exc, "wait for the sweep")
            )
        return f"{what} while {doing} of the server on {where}: {said}. {after}"
    status = exc.kwargs.get("status")
    check = "Check that Placement is up and its log."
    if isinstance(exc, exception.PlacementUnavailable):
        what = f"Placement answered HTTP {status}" if status else "Placement did not answer"
    elif exc.kwargs.get("placement_code") == exception.PlacementError.CONCURRENT_UPDATE:
        what = "Another writer kept changing the same Placement records"
        check = "If it recurs, look for another service writing the same allocations."
    else:
        what = "Placement failed"
    if ends:
        after = (
            f"The conductor ends the {name} and puts back on {where} what the server held "
            f"there: retry the {name} once Placement answers. If Placement could not take "
            f"even that, the {name} is left in flight and {_SWEEP.format(move=name)}, "
            f"schedules it again. {check}"
        )
    else:
        after = (
            f"Nothing is lost: {_SWEEP.format(move=name)}, takes the {name} on again "
            f"(completes or undoes it). {check}"
        )
    return f"{what} while {doing} of the server on {where}: {said}. {after}"


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


def _other(decision: str) -> str:
    return "revert" if decision == "confirm" else "confirm"


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
