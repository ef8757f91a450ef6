"""A move's failures in words: a compute host's step, no host found (resize,
migration, build), a Placement failure of a conductor step, a restore refused.
"""

from collections.abc import Mapping, Sequence

from resize_sched import exception
from resize_sched.words.base import (
    _LOG,
    _SWEEP,
    _flavor,
    _placement_fix,
    _placement_said,
    reason_of,
)


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
