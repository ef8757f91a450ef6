"""Data API for instance actions and their events (a mixin of ``Database``).

An *action* is one request a user made of a server (``create``, ``resize``,
``confirmResize``, ``revertResize``, ``delete``), recorded when the API
accepts it; its *events* are the steps the services ran for it
(``conductor_migrate_server``, ``compute_prep_resize``...), each with a
result (``Success`` or ``Error``) and, on failure, why. This is what
``os-instance-actions`` shows, as in Nova.

A step finds its action by request id when it knows it, else as the newest
action of the server with one of the names the step belongs to: only one
resize (or confirm, revert) of a server is in flight at a time, so the newest
``resize`` is the one a resize step belongs to.

Recording is safe to repeat: starting an event that is already open reuses
it, finishing one that is already finished changes nothing. Recording never
breaks the step it records: a failure to write an event is logged.

:meth:`ActionApi.action_event` is the one way a step is recorded: a context
manager that starts the event, and finishes it ``Success`` on a clean exit or
``Error`` with the reason on an exception. A step that turns out not to be
due (:class:`~resize_sched.exception.StepNotDue`: a duplicate or late message)
leaves no event behind.

The action names and event results are in :mod:`resize_sched.db.action_names`
and the statements in :mod:`resize_sched.db.action_queries`; both are
re-exported here (``action_api.STOP``, ``action_api.step_event_columns``).
"""

import contextlib
import datetime
from collections.abc import Iterable, Iterator
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import ERRORS, models
from resize_sched.db.action_names import (
    CONFIRM_RESIZE,
    CREATE,
    DELETE,
    ERROR,
    EVACUATE,
    LIVE_MIGRATION,
    MIGRATE,
    RESET_STATE,
    RESIZE,
    RESIZE_OR_MIGRATE,
    REVERT_RESIZE,
    SHELVE,
    SHELVE_OFFLOAD,
    START,
    STOP,
    SUCCESS,
    UNSHELVE,
    failure_text,
)
from resize_sched.db.action_queries import (
    action_and_open_event,
    action_uuid,
    event_statements,
    find_action,
    finished_event,
    open_event,
    step_event_columns,
    step_event_params,
    succeed_statements,
)
from resize_sched.db.retry import call_uuid
from resize_sched.db.session import SessionSource, select_rows, writes

__all__ = [
    "CONFIRM_RESIZE",
    "CREATE",
    "DELETE",
    "ERROR",
    "EVACUATE",
    "LIVE_MIGRATION",
    "MIGRATE",
    "RESET_STATE",
    "RESIZE",
    "RESIZE_OR_MIGRATE",
    "REVERT_RESIZE",
    "SHELVE",
    "SHELVE_OFFLOAD",
    "START",
    "STOP",
    "SUCCESS",
    "UNSHELVE",
    "ActionApi",
    "action_and_open_event",
    "failure_text",
    "step_event_columns",
    "step_event_params",
]

LOG = logging.getLogger(__name__)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class ActionApi(SessionSource):
    """Instance actions and their events."""

    # -- actions -----------------------------------------------------------------------

    @writes
    def action_start(
        self,
        session: Session,
        server_uuid: str,
        request_id: str,
        action: str,
        *,
        user_id: str | None,
        project_id: str | None,
    ) -> models.InstanceAction:
        """Record that the API accepted ``action`` on a server.

        Idempotent: the same request recording the same action again gets the
        row it recorded first. Its uuid is made from the three
        (:func:`~resize_sched.db.action_queries.action_uuid`), so that a run
        again that does not see the first row yet cannot add a second one.

        :param request_id: the request's id (``req-...``), the action's key.
        :param action: ``create``, ``resize``, ``confirmResize``...
        :returns: the action.
        """
        key = {"server_uuid": server_uuid, "request_id": request_id, "action": action}
        found = session.scalars(select_rows(models.InstanceAction, **key)).first()
        if found is not None:
            return found
        row = models.InstanceAction(
            **key,
            uuid=action_uuid(server_uuid, request_id, action),
            user_id=user_id,
            project_id=project_id,
            start_time=_now(),
        )
        session.add(row)
        session.flush()
        return row

    def action_list(self, server_uuid: str) -> list[models.InstanceAction]:
        """A server's actions, newest first."""
        action = models.InstanceAction
        return self._list(
            action, server_uuid=server_uuid, order_by=(action.start_time.desc(), action.id.desc())
        )

    def action_get_by_request_id(
        self, server_uuid: str, request_id: str
    ) -> models.InstanceAction | None:
        """A server's action recorded for a request, or None."""
        return self._first(
            models.InstanceAction,
            server_uuid=server_uuid,
            request_id=request_id,
            order_by=(models.InstanceAction.id.desc(),),
        )

    def action_events(self, action_id: int) -> list[models.InstanceActionEvent]:
        """An action's events, oldest first."""
        event = models.InstanceActionEvent
        return self._list(event, action_id=action_id, order_by=(event.start_time, event.id))

    def action_finish(self, server_uuid: str, actions: Iterable[str]) -> None:
        """Mark the server's newest action among ``actions`` finished (once)."""
        self._safely(self._action_finish, server_uuid, tuple(actions))

    @writes
    def _action_finish(self, session: Session, server_uuid: str, actions: tuple[str, ...]) -> None:
        action = find_action(session, server_uuid, actions, None)
        if action is not None and action.finish_time is None:
            action.finish_time = _now()

    # -- events --------------------------------------------------------------------------

    def action_event_start(
        self,
        server_uuid: str,
        event: str,
        actions: Iterable[str],
        *,
        host: str | None = None,
        request_id: str | None = None,
    ) -> int | None:
        """Record that a step began; reuse the event if it is already open.

        :param event: the step's name (``compute_prep_resize``...).
        :param actions: the action names the step belongs to.
        :param host: where the step runs.
        :param request_id: the request's id, when the step knows it.
        :returns: the id of the event this call created, or None when it
            reused an open one, found no action, or could not write.
        """
        return self._safely(
            self._event_start, server_uuid, event, tuple(actions), host, request_id
        )

    @writes
    def _event_start(
        self,
        session: Session,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        host: str | None,
        request_id: str | None,
    ) -> int | None:
        return self.start_event_in(session, server_uuid, event, actions, host, request_id)

    @classmethod
    def start_event_in(
        cls,
        session: Any,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        host: str | None,
        request_id: str | None = None,
    ) -> int | None:
        """:meth:`action_event_start` within the caller's transaction ``session``.

        Two statements when it opens an event (three with the action's
        ``updated_at``): one read finds the action and any open event of
        that name together, then the event is inserted.
        """
        params = {
            "server_uuid": server_uuid,
            "event": event,
            "actions": list(actions),
            "host": host,
            "request_id": request_id,
        }
        query = action_and_open_event(host is not None, request_id is not None)
        found = session.execute(query, params).first()
        action_id, open_id = found if found is not None else (None, None)
        return cls.open_event_in(session, server_uuid, event, actions, host, action_id, open_id)

    @staticmethod
    def open_event_in(
        session: Any,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        host: str | None,
        action_id: int | None,
        open_id: int | None,
    ) -> int | None:
        """Within ``session``: :meth:`start_event_in` once the action and any
        open event are found (:func:`step_event_columns` finds them in a
        query of the caller's).

        :param action_id: the action to record in; None: there is none.
        :param open_id: an open event of that name; None: there is none.
        :returns: the id of the event opened, or None (no action, or reused).
        """
        if action_id is None:
            LOG.debug("Server %s: no %s action to record %s in", server_uuid, actions, event)
            return None
        if open_id is not None:
            return None
        now = _now()
        insert, touch = event_statements()
        params = {
            "e_uuid": call_uuid("event", action_id, event, host),
            "e_action": action_id,
            "e_event": event,
            "e_now": now,
            "e_host": host,
        }
        event_id: int = session.execute(insert, params).inserted_primary_key[0]
        # NOTE: os-instance-actions 2.58 lists actions changed since a time
        # by their updated_at, which a new event moves on.
        session.execute(touch, {"action_id": action_id, "now": now})
        return event_id

    def action_event_finish(
        self,
        server_uuid: str,
        event: str,
        actions: Iterable[str],
        *,
        result: str = SUCCESS,
        message: str | None = None,
        traceback: str | None = None,
        host: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Record that a step ended; a step never started is started now.

        Finishing an event that is already finished (a duplicate report:
        no open event, a finished one of the same name on the same host)
        changes nothing. An ``Error`` also sets the action's ``message`` to
        ``Error``, as Nova does.

        :param result: ``Success`` or ``Error``.
        :param message: why it failed (kept as the event's ``details``).
        :param traceback: the failure's traceback (shown to administrators).
        """
        self._safely(
            self._event_finish,
            server_uuid,
            event,
            tuple(actions),
            result,
            message,
            traceback,
            host,
            request_id,
        )

    @writes
    def _event_finish(
        self,
        session: Session,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        result: str,
        message: str | None,
        traceback: str | None,
        host: str | None,
        request_id: str | None,
    ) -> None:
        self.finish_event_in(
            session, server_uuid, event, actions, result, message, traceback, host, request_id
        )

    @classmethod
    def finish_event_in(
        cls,
        session: Any,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        result: str,
        message: str | None = None,
        traceback: str | None = None,
        host: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """:meth:`action_event_finish` within the caller's transaction ``session``."""
        if result not in (SUCCESS, ERROR):
            raise exception.Invalid(reason=f"unknown event result {result!r}")
        action = find_action(session, server_uuid, actions, request_id)
        if action is None:
            LOG.debug("Server %s: no %s action to record %s in", server_uuid, actions, event)
            return
        now = _now()
        row = open_event(session, action.id, event, host)
        if row is None and finished_event(session, action.id, event, host):
            LOG.debug("Server %s: %s on %s already recorded", server_uuid, event, host)
            return
        if row is None:
            row = models.InstanceActionEvent(
                uuid=call_uuid("event", action.id, event, host),
                action_id=action.id,
                event=event,
                start_time=now,
                host=host,
            )
            session.add(row)
        row.finish_time = now
        row.result = result
        row.host = row.host or host
        if result == ERROR:
            row.details = message
            row.traceback = traceback or message
            action.message = ERROR
        action.updated_at = now

    @staticmethod
    def succeed_event_in(session: Any, event_id: int) -> bool:
        """Within ``session``: the open event ``event_id`` ends ``Success``.

        :returns: False when it is no longer open (nothing changed).
        """
        finish, touch = succeed_statements()
        params = {"event_id": event_id, "now": _now()}
        done = session.execute(finish, params).rowcount
        if done:
            session.execute(touch, params)
        return bool(done)

    @writes
    def _event_discard(self, session: Session, event_id: int) -> None:
        self.discard_event_in(session, event_id)

    @staticmethod
    def discard_event_in(session: Any, event_id: int) -> None:
        """Drop the still open event ``event_id`` (a step that was not due)."""
        session.execute(
            sa.delete(models.InstanceActionEvent).where(
                models.InstanceActionEvent.id == event_id,
                models.InstanceActionEvent.finish_time.is_(None),
            )
        )

    @contextlib.contextmanager
    def action_event(
        self,
        server_uuid: str,
        event: str,
        actions: Iterable[str],
        *,
        host: str | None = None,
        request_id: str | None = None,
        said: list[str] | None = None,
    ) -> Iterator[None]:
        """Record the step run inside the ``with`` block as one event.

        A clean exit records ``Success``; an exception records ``Error`` with
        what the block appended to ``said`` (the failure in words, see
        :mod:`resize_sched.words`), else :func:`failure_text`, and is raised
        again. A
        :class:`~resize_sched.exception.StepNotDue` means the step had
        nothing to do (a duplicate or late message): the event this block
        opened is dropped, so a replay leaves no misleading ``Error``.

        :param actions: the action names the step belongs to.
        """
        actions = tuple(actions)
        opened = self.action_event_start(
            server_uuid, event, actions, host=host, request_id=request_id
        )
        try:
            yield
        except exception.StepNotDue:
            if opened is not None:
                self._safely(self._event_discard, opened)
            raise
        except Exception as exc:
            message, text = (said[-1], said[-1]) if said else failure_text(exc)
            self.action_event_finish(
                server_uuid,
                event,
                actions,
                result=ERROR,
                message=message,
                traceback=text,
                host=host,
                request_id=request_id,
            )
            raise
        self.action_event_finish(
            server_uuid, event, actions, result=SUCCESS, host=host, request_id=request_id
        )

    def action_event_failed(
        self,
        server_uuid: str,
        event: str,
        actions: Iterable[str],
        reason: str,
        *,
        host: str | None = None,
    ) -> None:
        """Record that a step reported elsewhere failed for ``reason``."""
        self.action_event_finish(
            server_uuid, event, actions, result=ERROR, message=reason, traceback=reason, host=host
        )

    # -- helpers -----------------------------------------------------------------------------

    def _safely(self, function: Any, *args: Any) -> Any:
        """Run a recording write; a failure is logged, never raised into the step."""
        try:
            return function(*args)
        except (*ERRORS, exception.ResizeSchedException) as exc:
            LOG.warning("Instance action not recorded (%s%r): %s", function.__name__, args, exc)
            return None
