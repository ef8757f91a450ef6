"""A conductor step's bookkeeping, folded into the step's own transactions.

A step (schedule, confirm, revert, ...) owns its migration from a
compare-and-swap at the start to a release at the end, records itself as an
instance-action event, and marks each journal entry ``applied`` once its
Placement write has landed. Done one write at a time that is eight commits
for a schedule; none of it needs a commit of its own:

* the event is opened in the transaction that takes the migration
  (:meth:`~resize_sched.db.migration_api.MigrationApi.step_begin`);
* an entry whose write landed waits in :attr:`StepRun.applied` and is marked
  by the step's next write: the next entry's intent, or the step's end. Until
  then it is ``intended`` with the holdings it leads to already recorded, the
  very state a crash right after the write leaves, which crash recovery
  settles by reading Placement;
* the step's last state change ends it in the same transaction (marks, event
  ``Success``, release: ``migration_advance(..., ends=run)``); a step that
  fails or was not due ends with one transaction of its own
  (:meth:`~resize_sched.db.migration_api.MigrationApi.step_end`).

A schedule that claims at once is thus three commits: take, intent, advance.
"""

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from resize_sched.db import models
from resize_sched.db.action_api import ERROR, SUCCESS, ActionApi, failure_text


@dataclass(frozen=True)
class StepEvent:
    """The instance-action event a step records: its name, the actions it
    belongs to (the newest of them is the one recorded in), and the host."""

    event: str
    actions: tuple[str, ...]
    host: str | None = None


@dataclass
class StepRun:
    """One run of a step, from taking its migration to giving it back.

    :param migration_uuid: the migration the step runs on.
    :param token: written to ``task_owner`` while the step owns it.
    :param name: the step's name, for messages.
    :param event: the event to record, or None.
    """

    migration_uuid: str
    token: str
    name: str
    event: StepEvent | None = None
    #: the event this run opened (None: none opened, or one already open reused)
    event_id: int | None = None
    #: journal entries whose write landed, still to be marked ``applied``
    applied: list[int] = field(default_factory=list)
    #: the step's end is recorded: nothing is left to write
    ended: bool = False


def begin_in(session: Any, run: StepRun, server_uuid: str) -> None:
    """Within ``session``: open the event of a step that has taken its migration."""
    event = run.event
    if event is not None:
        run.event_id = ActionApi.start_event_in(
            session, server_uuid, event.event, event.actions, event.host
        )


def mark_applied_in(session: Any, entry_ids: list[int]) -> None:
    """Within ``session``: mark the entries that are still intended ``applied``.

    One settled meanwhile (by crash recovery, reading the same outcome) is
    left as it is.
    """
    if not entry_ids:
        return
    session.execute(
        sa.update(models.JournalEntry)
        .where(
            models.JournalEntry.id.in_(entry_ids),
            models.JournalEntry.state == models.JOURNAL_INTENDED,
        )
        .values(state=models.JOURNAL_APPLIED)
        .execution_options(synchronize_session=False)
    )


def end_in(
    session: Any,
    run: StepRun,
    server_uuid: str,
    *,
    error: BaseException | None = None,
    not_due: bool = False,
) -> None:
    """Within ``session``: the journal marks and the event of a step that ends.

    :param error: the step failed with it: the event records ``Error``.
    :param not_due: the step turned out not to be due: the event it opened
        is dropped, so a replay leaves nothing behind.
    """
    mark_applied_in(session, run.applied)
    event = run.event
    if event is None:
        return
    if not_due:
        if run.event_id is not None:
            ActionApi.discard_event_in(session, run.event_id)
        return
    if error is None:
        if run.event_id is not None and ActionApi.succeed_event_in(session, run.event_id):
            return
        ActionApi.finish_event_in(
            session, server_uuid, event.event, event.actions, SUCCESS, host=event.host
        )
        return
    message, text = failure_text(error)
    ActionApi.finish_event_in(
        session, server_uuid, event.event, event.actions, ERROR, message, text, event.host
    )
