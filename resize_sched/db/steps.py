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

A step whose first write is a journal entry may take the migration with that
write instead (:attr:`StepRun.take_late`, a schedule): it starts with a read
that checks the step is due (the same conditions, no lock), and the entry's
transaction takes the migration first, by the same compare-and-swap, and
opens the event there; nothing reaches Placement before that commit, so two
deliveries still write at most once (the second finds the migration taken
and stops). A step that ends without writing anything ends with the same
compare-and-swap (no owner, the expected status). A schedule that claims at
once is then two commits: intent (with the take), advance.
"""

import datetime
from dataclasses import dataclass, field
from typing import Any

from resize_sched import exception
from resize_sched.db import journal as journals
from resize_sched.db import models
from resize_sched.db.action_api import ActionApi, failure_text
from resize_sched.db.action_names import ERROR, SUCCESS
from resize_sched.db.cas import cas_update
from resize_sched.db.migration_checks import server_of_migration_ok


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
    :param take_late: the step starts with a read, and takes the migration
        in the transaction of its first write (see above).
    """

    migration_uuid: str
    token: str
    name: str
    event: StepEvent | None = None
    load_request_spec: bool = False
    take_late: bool = False
    #: the run owns the migration (its ``task_owner`` is :attr:`token`)
    taken: bool = False
    #: with ``take_late``, once read: the statuses the take expects, and the
    #: action and open event the read found for the event
    #: (:func:`resize_sched.db.action_queries.step_event_columns`)
    expected_status: tuple[str, ...] = ()
    found: tuple[int | None, int | None] | None = None
    #: the migration's journal's last seq as the run knows it: read with a
    #: late take's read (0: none), then its own last entry's. Its next entry
    #: follows it while the row is as the run last saw it (every append
    #: moves the row's ``updated_at`` on)
    last_seq: int | None = None
    #: with ``take_late`` and ``load_request_spec``, once read: the host
    #: asked about (None: only the zones) and the zones' aggregates, for the
    #: move's scheduling request (None: not read)
    zones: tuple[str | None, Any] | None = None
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
    def owner(self) -> str | None:
        """The ``task_owner`` the migration has while this run holds it:
        :attr:`token` once taken, None before a late take."""
        return self.token if self.taken else None

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
        brought them (:func:`resize_sched.db.action_queries.step_event_columns`);
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


def take_in(
    session: Any,
    run: StepRun,
    values: dict[str, Any] | None = None,
    seen_at: datetime.datetime | None = None,
) -> bool:
    """Within ``session``: the late take of a run (:attr:`StepRun.take_late`).

    The compare-and-swap :meth:`~resize_sched.db.step_api.StepApi.step_begin`
    makes (still in one of the statuses the run read, no owner, the server
    live with no delete asked for), with ``values`` (more migration columns)
    set by the same statement, and the run's event opened. The caller marks
    the run :attr:`~StepRun.taken` once the transaction commits.

    :param seen_at: the ``updated_at`` of the row the run read: the take
        first expects it too, and tells whether the row is still as read.
    :returns: whether the row was still as read (``seen_at``) when taken.
    :raises resize_sched.exception.StepNotDue: the step is no longer due;
        the caller's transaction must be rolled back.
    """
    columns = {"task_owner": run.token, **(values or {})}
    expected: list[tuple[str, Any]] = [("status", run.expected_status), ("task_owner", None)]
    for same in (True, False) if seen_at is not None else (False,):
        changed, migration = cas_update(
            session,
            models.Migration,
            run.migration_uuid,
            columns,
            expected=[*expected, ("updated_at", seen_at)] if same else expected,
            fixed=(server_of_migration_ok(),),
            reload=False,
        )
        if changed:
            assert run.server_uuid is not None, "a late take follows the step's read"
            begin_in(session, run, run.server_uuid, run.found)
            return same
    if migration is None:
        raise exception.MigrationNotFound(migration_id=run.migration_uuid)
    reason = (
        "another step or a delete took the migration over"
        if migration.task_owner is not None or migration.status in run.expected_status
        else f"it is {migration.status}"
    )
    raise exception.StepNotDue(migration_id=run.migration_uuid, step=run.name, reason=reason)


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
