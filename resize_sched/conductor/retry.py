"""The sweep's retry of a confirm or revert Placement refused.

A revert is refused when its source no longer admits the old flavor: a
``max_unit`` (with ``total``) lowered below it, a ``total`` or
``allocation_ratio`` lowered, room taken by other servers. The server then
waits in VERIFY_RESIZE again, holding exactly what it held, and the step
that was refused recorded on its migration (``refused_decision``) the
decision and the generation of the provider Placement refused
(:meth:`~resize_sched.conductor.tasks.resize.ResizeTask._undecide`).

Placement moves a provider's generation whenever its inventory or its
usage changes, which is the only thing that can lift such a refusal. So at
each sweep, for every such migration, :func:`retry_refused` reads that
generation (one ``GET /resource_providers/{uuid}``), and when it moved
begins the same decision again through the same compare-and-swap the API
uses (:func:`resize_sched.actions.begin_confirm` /
:func:`~resize_sched.actions.begin_revert`: server in VERIFY_RESIZE with no
task, migration ``finished`` -> ``confirming`` / ``reverting``), then
completes it as the conductor completes one the API began. When the user
decided something else meanwhile (a confirm, another revert, a delete),
the compare-and-swap fails and the retry is a logged no-op. A retry refused
again records the new generation and waits for the next change.
"""

from collections.abc import Callable
from typing import Any

import oslo_messaging as messaging
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.db import states

LOG = logging.getLogger(__name__)

#: The compare-and-swap found the server or its migration moved on.
_DECIDED_ELSEWHERE = (
    exception.ServerStateConflict,
    exception.MigrationStateConflict,
    exception.ServerNotFound,
    exception.MigrationNotFound,
)


#: Completes a decision begun: (``confirm`` or ``revert``, migration uuid).
Complete = Callable[[str, str], Any]


def retry_refused(db: Any, client: Any, complete: Complete) -> dict[str, str]:
    """Begin again each refused confirm or revert whose provider changed.

    :param db: the :class:`~resize_sched.db.api.Database`.
    :param client: the Placement client.
    :param complete: completes a decision once begun, as the conductor's
        ``confirm_resize`` / ``revert_resize`` do for one the API began.
    :returns: migration uuid -> what was done, for those begun again.
    """
    done: dict[str, str] = {}
    for migration in db.migration_list_in_flight():
        refused = migration.refused_decision
        if migration.status != states.MIGRATION_FINISHED or not refused:
            continue
        try:
            outcome = _retry(db, client, complete, migration, refused)
        except (exception.ResizeSchedException, messaging.ExpectedException) as exc:
            if isinstance(exc, messaging.ExpectedException):
                exc = exc.exc_info[1]
            LOG.info("Migration %s: refused %s not retried now: %s", migration.uuid, refused, exc)
            continue
        if outcome is not None:
            done[migration.uuid] = outcome
    return done


def _retry(
    db: Any, client: Any, complete: Complete, migration: Any, refused: dict[str, Any]
) -> str | None:
    decision = refused.get("decision")
    provider = refused.get("provider")
    if decision not in ("confirm", "revert") or not provider:
        return None
    generation = client.get_resource_provider(provider).get("generation")
    if refused.get("generation") is not None and generation == refused.get("generation"):
        return None
    begin = actions.begin_confirm if decision == "confirm" else actions.begin_revert
    try:
        begun = begin(db, migration.server_uuid)
    except _DECIDED_ELSEWHERE as exc:
        LOG.info(
            "Migration %s: the refused %s is not begun again: decided otherwise meanwhile (%s)",
            migration.uuid,
            decision,
            exc,
        )
        return None
    LOG.info(
        "Migration %s: provider %s changed (generation %s -> %s); the refused %s begun again",
        begun.uuid,
        provider,
        refused.get("generation"),
        generation,
        decision,
    )
    complete(decision, begun.uuid)
    after = db.migration_get(begun.uuid)
    return f"{decision} retried: {after.status}"
