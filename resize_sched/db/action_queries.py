"""The statements of instance actions and events, built once and bound at each run.

The look-up of a server's newest action among some names (written for the
index on ``(server_uuid, id)``), the one query finding a step's action and
its open event (alone, or folded into a step's read of its migration), and
the event's insert and finish. Building a statement costs far more than
running it (see :func:`resize_sched.db.session.cas_update`), so each shape
is built once.
"""

import functools
import uuid as uuidlib
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import aliased

from resize_sched.db import models
from resize_sched.db.action_names import SUCCESS

#: the namespace of :func:`action_uuid` (a fixed, arbitrary uuid)
_ACTIONS = uuidlib.UUID("5d0b7c52-1f0e-4a8e-9d51-2c8b0f6a7e13")


def action_uuid(server_uuid: str, request_id: str, action: str) -> str:
    """The uuid of the action ``action`` of ``server_uuid`` recorded for the
    request ``request_id``: made from the three, so that recording it again
    (a write run again, two runs of one request) cannot add a second row."""
    return str(uuidlib.uuid5(_ACTIONS, f"{server_uuid}/{request_id}/{action}"))


def server_newest_first(
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
def action_and_open_event(with_host: bool, with_request_id: bool) -> sa.Select[Any]:
    """One query for :func:`find_action` and :func:`open_event` together:
    its first row is ``(action id, id of an open event or None)``, none when
    there is no such action. Bound: ``server_uuid``, ``actions``, ``event``,
    ``host``, ``request_id``.

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
    of_server, newest_first = server_newest_first(other, sa.bindparam("server_uuid"))
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
    no host, ``with_host``): what ``ActionApi.start_event_in`` reads, for
    a step, folded into the read of its migration.
    """
    action = models.InstanceAction
    events = models.InstanceActionEvent
    of_server, newest_first = server_newest_first(action, models.Migration.server_uuid)
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
def event_statements() -> tuple[sa.Insert, sa.Update]:
    """An event's insert (bound: ``e_uuid``, ``e_action``, ``e_event``,
    ``e_now``, ``e_host``); the ``updated_at`` (bound: ``now``) of the action bound to
    ``action_id``. Built once (see :func:`resize_sched.db.session.cas_update`)."""
    actions: sa.Table = models.InstanceAction.__table__  # type: ignore[assignment]
    events: sa.Table = models.InstanceActionEvent.__table__  # type: ignore[assignment]
    now = sa.bindparam("e_now", type_=events.c.start_time.type)
    return (
        sa.insert(events).values(
            uuid=sa.bindparam("e_uuid"),
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
def succeed_statements() -> tuple[sa.Update, sa.Update]:
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


def find_action(
    session: Any, server_uuid: str, actions: tuple[str, ...], request_id: str | None
) -> models.InstanceAction | None:
    """Within ``session``: the server's action among ``actions`` a step
    belongs to: the one of ``request_id`` if given and found, else the
    newest; None when it has none."""
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
    of_server, newest_first = server_newest_first(action, server_uuid)
    return session.scalars(
        sa.select(action).where(of_server, named).order_by(*newest_first).limit(1)
    ).first()


def open_event(
    session: Any, action_id: int, event: str, host: str | None
) -> models.InstanceActionEvent | None:
    """Within ``session``: the newest still open event ``event`` of the
    action (on ``host``, or on no host), or None."""
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
    return session.scalars(query.order_by(models.InstanceActionEvent.id.desc()).limit(1)).first()


def finished_event(session: Any, action_id: int, event: str, host: str | None) -> bool:
    """Within ``session``: whether the action has a finished event ``event``
    (on ``host``, when given): a report of it again is a duplicate."""
    query = sa.select(models.InstanceActionEvent.id).where(
        models.InstanceActionEvent.action_id == action_id,
        models.InstanceActionEvent.event == event,
        models.InstanceActionEvent.finish_time.is_not(None),
    )
    if host is not None:
        query = query.where(models.InstanceActionEvent.host == host)
    return session.scalars(query.limit(1)).first() is not None
