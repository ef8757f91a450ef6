"""A conductor step's bookkeeping, folded into the step's own transactions.

A step (schedule, confirm, revert, ...) owns its migration from a
compare-and-swap at the start to a release at the end, records itself as an
instance-action event, and marks each journal entry ``applied`` once its
Placement write has landed. Done one write at a time that is eight commits
for a schedule; none of it needs a commit of its own:

* the event is opened in the transaction that takes the migration
  (:meth:`~resize_sched.db.step_api.StepApi.step_begin`);
* an entry whose write landed waits in :attr:`StepRun.applied` and is marked
  by the step's next write: the next entry's intent, or the step's end. Until
  then it is ``intended`` with the holdings it leads to already recorded, the
  very state a crash right after the write leaves, which crash recovery
  settles by reading Placement;
* the step's last state change ends it in the same transaction (marks, event
  ``Success``, release: ``migration_advance(..., ends=run)``); a step that
  fails or was not due ends with one transaction of its own
  (:meth:`~resize_sched.db.step_api.StepApi.step_end`).

A schedule that claims at once is thus three commits: take, intent, advance.
"""

from dataclasses import dataclass, field
from typing import Any

from resize_sched.db import journal as journals
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
    :param load_request_spec: the step schedules: the transaction that takes
        the migration also reads its server's request spec
        (:attr:`request_spec`), so scheduling needs no read of its own.
    """

    migration_uuid: str
    token: str
    name: str
    event: StepEvent | None = None
    load_request_spec: bool = False
    #: the event this run opened (None: none opened, or one already open reused)
    event_id: int | None = None
    #: the migration's server, once the run has taken the migration
    server_uuid: str | None = None
    #: with ``load_request_spec``, once taken: the server's request spec, or
    #: None when it has none (see :attr:`request_spec_loaded`)
    request_spec: Any = None
    #: journal entries whose write landed, still to be marked ``applied``
    applied: list[int] = field(default_factory=list)
    #: the step's end is recorded: nothing is left to write
    ended: bool = False
    #: what the step's failure means for an operator, in words
    #: (:mod:`resize_sched.words`), set by the step before it raises; the
    #: event records it instead of the error's own text
    failure: str | None = None

    @property
    def request_spec_loaded(self) -> bool:
        """:attr:`request_spec` was read with the take (None there then
        means "no spec")."""
        return self.load_request_spec and self.server_uuid is not None


def begin_in(
    session: Any,
    run: StepRun,
    server_uuid: str,
    found: tuple[int | None, int | None] | None = None,
) -> None:
    """Within ``session``: open the event of a step that has taken its migration.

    :param found: the action and open event, when the migration's read
        brought them (:func:`resize_sched.db.action_api.step_event_columns`);
        None: looked for now.
    """
    event = run.event
    if event is None:
        return
    if found is None:
        run.event_id = ActionApi.start_event_in(
            session, server_uuid, event.event, event.actions, event.host
        )
    else:
        run.event_id = ActionApi.open_event_in(
            session, server_uuid, event.event, event.actions, event.host, *found
        )


def end_in(
    session: Any,
    run: StepRun,
    server_uuid: str | None,
    *,
    error: BaseException | None = None,
    not_due: bool = False,
) -> None:
    """Within ``session``: the journal marks and the event of a step that ends.

    :param server_uuid: the migration's server (None: only when the run
        records no event).
    :param error: the step failed with it: the event records ``Error``.
    :param not_due: the step turned out not to be due: the event it opened
        is dropped, so a replay leaves nothing behind.
    """
    journals.mark_applied_in(session, models.JournalEntry, run.applied)
    event = run.event
    if event is None:
        return
    assert server_uuid is not None, "a step that records an event needs its server"
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
    message, text = (run.failure, run.failure) if run.failure else failure_text(error)
    ActionApi.finish_event_in(
        session, server_uuid, event.event, event.actions, ERROR, message, text, event.host
    )
