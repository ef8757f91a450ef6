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
"""

import contextlib
import datetime
import functools
import traceback as tb
from collections.abc import Iterable, Iterator
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import aliased

from resize_sched import exception
from resize_sched.db import ERRORS, models
from resize_sched.db.session import SessionSource, retry_on_deadlock

LOG = logging.getLogger(__name__)

#: The action names, as Nova's ``instance_actions`` module spells them.
CREATE = "create"
RESIZE = "resize"
MIGRATE = "migrate"
CONFIRM_RESIZE = "confirmResize"
REVERT_RESIZE = "revertResize"
DELETE = "delete"
STOP = "stop"
START = "start"
RESET_STATE = "resetState"
LIVE_MIGRATION = "live-migration"
EVACUATE = "evacuate"
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelveOffload"
UNSHELVE = "unshelve"

#: The actions a resize's steps belong to: a cold migration (``migrate``)
#: runs the same steps, and a server has one of them in flight at a time.
RESIZE_OR_MIGRATE = (RESIZE, MIGRATE)

#: Event results.
SUCCESS = "Success"
ERROR = "Error"

#: The longest traceback kept.
_MAX_TRACEBACK = 65535


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def failure_text(exc: BaseException) -> tuple[str, str]:
    """What an event records about a failure: a one-line message and a traceback.

    An error of :mod:`resize_sched.exception` is an expected outcome (no
    room, Placement refused, a host failed): its message is recorded as both,
    with no Python traceback (there is no bug to trace). A step that knows
    more says it in words itself (:mod:`resize_sched.words`): see
    :attr:`resize_sched.db.steps.StepRun.failure` and :meth:`ActionApi.action_event`.
    Anything else is a bug, recorded with its traceback.

    :param exc: the exception the step raised.
    :returns: ``(message, traceback)``.
    """
    if isinstance(exc, exception.ResizeSchedException):
        return exc.message, exc.message
    message = f"{type(exc).__name__}: {exc}"
    text = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))
    return message, text[-_MAX_TRACEBACK:]


def _server_newest_first(
    action: Any, server_uuid: Any
) -> tuple[sa.ColumnElement[bool], tuple[Any, Any]]:
    """The WHERE clause and ORDER BY for "the actions of ``server_uuid``,
    newest first" (``action``: :class:`~resize_sched.db.models.InstanceAction`
    or an alias; ``server_uuid``: a value, a bound parameter or a column of
    an outer query).

    Written so that only the index on ``(server_uuid, id)`` gives rows in
    that order, newest of the server first. Asked for ``server_uuid = ?
    ORDER BY id DESC LIMIT 1``, MariaDB and PostgreSQL may walk the primary
    key backwards instead, until a row of the server turns up: for a server
    whose actions are old, most of the table, on every step. PostgreSQL
    does so even with that index whenever it cannot see which server it is
    (a column of the outer query, a prepared statement's generic plan) and
    the table has few servers. Ordering by ``server_uuid`` too takes the
    primary key out of the running; asking for it as a range of one value
    (``>=`` and ``<=``) rather than with ``=`` keeps PostgreSQL from dropping
    it from the ORDER BY as a constant. (Not ``BETWEEN``: MariaDB turns that
    back into ``=`` and then sorts the server's rows instead of reading the
    index in order.)
    """
    return (
        sa.and_(action.server_uuid >= server_uuid, action.server_uuid <= server_uuid),
        (action.server_uuid.desc(), action.id.desc()),
    )


@functools.cache
def _action_and_open_event(with_host: bool, with_request_id: bool) -> sa.Select[Any]:
    """One query for :meth:`ActionApi._find_action` and
    :meth:`ActionApi._open_event` together: its first row is ``(action id, id
    of an open event or None)``, none when there is no such action. Bound:
    ``server_uuid``, ``actions``, ``event``, ``host``, ``request_id``.

    The action's id is found first, by itself, and only that action is
    joined to its events: each way of finding it (the step's own request,
    else the newest) is one ``LIMIT 1`` that an index answers in a row or
    two. Sorting the join of all of them instead reads every matching
    action of the server, with its events, to keep one.
    """
    action = models.InstanceAction
    events = models.InstanceActionEvent
    other = aliased(action, name="candidate")
    actions = other.action.in_(sa.bindparam("actions", expanding=True))
    of_server, newest_first = _server_newest_first(other, sa.bindparam("server_uuid"))
    chosen: sa.ColumnElement[Any] = (
        sa.select(other.id)
        .where(of_server, actions)
        .order_by(*newest_first)
        .limit(1)
        .scalar_subquery()
    )
    if with_request_id:
        # NOTE: the action of the step's own request first, else the newest.
        own = (
            sa.select(other.id)
            .where(
                other.server_uuid == sa.bindparam("server_uuid"),
                other.request_id == sa.bindparam("request_id"),
                actions,
            )
            .order_by(other.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        chosen = sa.func.coalesce(own, chosen)
    joined = [
        events.action_id == action.id,
        events.event == sa.bindparam("event"),
        events.finish_time.is_(None),
    ]
    if with_host:
        joined.append(sa.or_(events.host == sa.bindparam("host"), events.host.is_(None)))
    return (
        sa.select(action.id, events.id)
        .select_from(action)
        .outerjoin(events, sa.and_(*joined))
        .where(action.id == chosen)
        .order_by(events.id.desc())
        .limit(1)
    )


@functools.cache
def step_event_columns(with_host: bool) -> tuple[sa.Label[Any], sa.Label[Any]]:
    """Two columns for a query of migrations: the id of the newest action of
    the migration's server named among ``ev_actions`` (bound, a list), and
    the id of an open event of it named ``ev_event`` (on ``ev_host``, or on
    no host, ``with_host``): what :meth:`ActionApi.start_event_in` reads, for
    a step, folded into the read of its migration.
    """
    action = models.InstanceAction
    events = models.InstanceActionEvent
    of_server, newest_first = _server_newest_first(action, models.Migration.server_uuid)
    newest = (
        sa.select(action.id)
        .where(of_server, action.action.in_(sa.bindparam("ev_actions", expanding=True)))
        .order_by(*newest_first)
        .limit(1)
        # NOTE: explicitly, or the copy nested in the next one is not
        # correlated (it would read every migration).
        .correlate(models.Migration)
        .scalar_subquery()
    )
    opened = [
        events.action_id == newest,
        events.event == sa.bindparam("ev_event"),
        events.finish_time.is_(None),
    ]
    if with_host:
        opened.append(sa.or_(events.host == sa.bindparam("ev_host"), events.host.is_(None)))
    open_event = (
        sa.select(events.id)
        .where(*opened)
        .order_by(events.id.desc())
        .limit(1)
        .correlate(models.Migration)
        .scalar_subquery()
    )
    return newest.label("step_action_id"), open_event.label("step_open_event_id")


def step_event_params(event: str, actions: tuple[str, ...], host: str | None) -> dict[str, Any]:
    """The parameters :func:`step_event_columns` binds."""
    return {"ev_event": event, "ev_actions": list(actions), "ev_host": host}


@functools.cache
def _event_statements() -> tuple[sa.Insert, sa.Update]:
    """An event's insert (bound: ``e_action``, ``e_event``, ``e_now``,
    ``e_host``); the ``updated_at`` (bound: ``now``) of the action bound to
    ``action_id``. Built once (see :func:`resize_sched.db.session.cas_update`)."""
    actions: sa.Table = models.InstanceAction.__table__  # type: ignore[assignment]
    events: sa.Table = models.InstanceActionEvent.__table__  # type: ignore[assignment]
    now = sa.bindparam("e_now", type_=events.c.start_time.type)
    return (
        sa.insert(events).values(
            action_id=sa.bindparam("e_action"),
            event=sa.bindparam("e_event"),
            start_time=now,
            created_at=now,
            host=sa.bindparam("e_host", type_=events.c.host.type),
        ),
        sa.update(actions)
        .where(actions.c.id == sa.bindparam("action_id"))
        .values(updated_at=sa.bindparam("now", type_=actions.c.updated_at.type)),
    )


@functools.cache
def _succeed_statements() -> tuple[sa.Update, sa.Update]:
    """The open event bound to ``event_id`` ends ``Success`` at ``now``; its
    action's ``updated_at`` becomes ``now``."""
    actions: sa.Table = models.InstanceAction.__table__  # type: ignore[assignment]
    events: sa.Table = models.InstanceActionEvent.__table__  # type: ignore[assignment]
    event_id = sa.bindparam("event_id")
    now = sa.bindparam("now", type_=events.c.finish_time.type)
    return (
        sa.update(events)
        .where(events.c.id == event_id, events.c.finish_time.is_(None))
        .values(finish_time=now, result=SUCCESS),
        sa.update(actions)
        .where(
            actions.c.id
            == sa.select(events.c.action_id).where(events.c.id == event_id).scalar_subquery()
        )
        .values(updated_at=now),
    )


class ActionApi(SessionSource):
    """Instance actions and their events."""

    # -- actions -----------------------------------------------------------------------

    @retry_on_deadlock
    def action_start(
        self,
        server_uuid: str,
        request_id: str,
        action: str,
        *,
        user_id: str | None,
        project_id: str | None,
    ) -> models.InstanceAction:
        """Record that the API accepted ``action`` on a server.

        Idempotent: the same request recording the same action again gets the
        row it recorded first.

        :param request_id: the request's id (``req-...``), the action's key.
        :param action: ``create``, ``resize``, ``confirmResize``...
        :returns: the action.
        """
        with self._writer() as session:
            found = session.scalars(
                sa.select(models.InstanceAction).where(
                    models.InstanceAction.server_uuid == server_uuid,
                    models.InstanceAction.request_id == request_id,
                    models.InstanceAction.action == action,
                )
            ).first()
            if found is not None:
                return found
            row = models.InstanceAction(
                server_uuid=server_uuid,
                request_id=request_id,
                action=action,
                user_id=user_id,
                project_id=project_id,
                start_time=_now(),
            )
            session.add(row)
            session.flush()
            return row

    def action_list(self, server_uuid: str) -> list[models.InstanceAction]:
        """A server's actions, newest first."""
        with self._reader() as session:
            return list(
                session.scalars(
                    sa.select(models.InstanceAction)
                    .where(models.InstanceAction.server_uuid == server_uuid)
                    .order_by(
                        models.InstanceAction.start_time.desc(), models.InstanceAction.id.desc()
                    )
                )
            )

    def action_get_by_request_id(
        self, server_uuid: str, request_id: str
    ) -> models.InstanceAction | None:
        """A server's action recorded for a request, or None."""
        with self._reader() as session:
            return session.scalars(
                sa.select(models.InstanceAction)
                .where(
                    models.InstanceAction.server_uuid == server_uuid,
                    models.InstanceAction.request_id == request_id,
                )
                .order_by(models.InstanceAction.id.desc())
            ).first()

    def action_events(self, action_id: int) -> list[models.InstanceActionEvent]:
        """An action's events, oldest first."""
        with self._reader() as session:
            return list(
                session.scalars(
                    sa.select(models.InstanceActionEvent)
                    .where(models.InstanceActionEvent.action_id == action_id)
                    .order_by(models.InstanceActionEvent.start_time, models.InstanceActionEvent.id)
                )
            )

    def action_finish(self, server_uuid: str, actions: Iterable[str]) -> None:
        """Mark the server's newest action among ``actions`` finished (once)."""
        self._safely(self._action_finish, server_uuid, tuple(actions))

    @retry_on_deadlock
    def _action_finish(self, server_uuid: str, actions: tuple[str, ...]) -> None:
        with self._writer() as session:
            action = self._find_action(session, server_uuid, actions, None)
            if action is not None and action.finish_time is None:
                action.finish_time = _now()

    # -- events --------------------------------------------------------------------------

    @staticmethod
    def _find_action(
        session: Any, server_uuid: str, actions: tuple[str, ...], request_id: str | None
    ) -> models.InstanceAction | None:
        action = models.InstanceAction
        named = action.action.in_(actions)
        # NOTE: LIMIT 1, not just first(): the driver would otherwise fetch
        # every matching action of the server to hand back one.
        if request_id is not None:
            found = session.scalars(
                sa.select(action)
                .where(action.server_uuid == server_uuid, action.request_id == request_id, named)
                .order_by(action.id.desc())
                .limit(1)
            ).first()
            if found is not None:
                return found
        of_server, newest_first = _server_newest_first(action, server_uuid)
        return session.scalars(
            sa.select(action).where(of_server, named).order_by(*newest_first).limit(1)
        ).first()

    @staticmethod
    def _open_event(
        session: Any, action_id: int, event: str, host: str | None
    ) -> models.InstanceActionEvent | None:
        query = sa.select(models.InstanceActionEvent).where(
            models.InstanceActionEvent.action_id == action_id,
            models.InstanceActionEvent.event == event,
            models.InstanceActionEvent.finish_time.is_(None),
        )
        if host is not None:
            query = query.where(
                sa.or_(
                    models.InstanceActionEvent.host == host,
                    models.InstanceActionEvent.host.is_(None),
                )
            )
        return session.scalars(
            query.order_by(models.InstanceActionEvent.id.desc()).limit(1)
        ).first()

    @staticmethod
    def _finished_event(session: Any, action_id: int, event: str, host: str | None) -> bool:
        query = sa.select(models.InstanceActionEvent.id).where(
            models.InstanceActionEvent.action_id == action_id,
            models.InstanceActionEvent.event == event,
            models.InstanceActionEvent.finish_time.is_not(None),
        )
        if host is not None:
            query = query.where(models.InstanceActionEvent.host == host)
        return session.scalars(query.limit(1)).first() is not None

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

    @retry_on_deadlock
    def _event_start(
        self,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        host: str | None,
        request_id: str | None,
    ) -> int | None:
        with self._writer() as session:
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
        query = _action_and_open_event(host is not None, request_id is not None)
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
        insert, touch = _event_statements()
        event_id: int = session.execute(
            insert, {"e_action": action_id, "e_event": event, "e_now": now, "e_host": host}
        ).inserted_primary_key[0]
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

    @retry_on_deadlock
    def _event_finish(
        self,
        server_uuid: str,
        event: str,
        actions: tuple[str, ...],
        result: str,
        message: str | None,
        traceback: str | None,
        host: str | None,
        request_id: str | None,
    ) -> None:
        with self._writer() as session:
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
        action = cls._find_action(session, server_uuid, actions, request_id)
        if action is None:
            LOG.debug("Server %s: no %s action to record %s in", server_uuid, actions, event)
            return
        now = _now()
        row = cls._open_event(session, action.id, event, host)
        if row is None and cls._finished_event(session, action.id, event, host):
            LOG.debug("Server %s: %s on %s already recorded", server_uuid, event, host)
            return
        if row is None:
            row = models.InstanceActionEvent(
                action_id=action.id, event=event, start_time=now, host=host
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
        finish, touch = _succeed_statements()
        params = {"event_id": event_id, "now": _now()}
        done = session.execute(finish, params).rowcount
        if done:
            session.execute(touch, params)
        return bool(done)

    @retry_on_deadlock
    def _event_discard(self, event_id: int) -> None:
        with self._writer() as session:
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
