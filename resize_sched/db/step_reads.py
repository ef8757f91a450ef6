"""How a conductor step reads its migration: the one statement, its parameters, and what it keeps.

A step's read brings the migration with, as the step needs them, its
server's request spec, the instance action and open event its event goes to
(:func:`~resize_sched.db.action_queries.step_event_columns`), whether the
server is live with no delete asked for, and the journal's last seq; the
statement is built once per shape (:func:`taken_query`). The data API that
runs it is :mod:`resize_sched.db.step_api`.
"""

import functools
from typing import Any

import sqlalchemy as sa

from resize_sched.db import action_queries, aggregate_api, models, steps
from resize_sched.db.cas import CAS_KEY
from resize_sched.db.migration_checks import server_of_migration_ok


@functools.cache
def server_by_migration() -> sa.ColumnElement[bool]:
    """Finds the server of the migration whose uuid is bound to ``CAS_KEY``."""
    return (
        models.Server.uuid
        == sa.select(models.Migration.server_uuid)
        .where(models.Migration.uuid == sa.bindparam(CAS_KEY))
        .scalar_subquery()
    )


@functools.cache
def taken_query(
    with_spec: bool, event: str | None, with_server_ok: bool = False
) -> sa.Select[Any]:
    """The migration by uuid (bound to ``uuid``), with its server's request
    spec (or None) when ``with_spec``, with the action and open event a
    step's event goes to (``event``: ``host``, ``no host``; see
    :func:`~resize_sched.db.action_queries.step_event_columns`), and whether
    its server is live with no delete asked for (``server_ok``) and its
    journal's last seq (``last_seq``) when ``with_server_ok`` (the read of
    a late take)."""
    spec = models.RequestSpec
    query = sa.select(models.Migration)
    if with_spec:
        query = query.add_columns(spec).outerjoin(
            spec, spec.server_uuid == models.Migration.server_uuid
        )
    if with_server_ok:
        journal = models.JournalEntry
        query = query.add_columns(
            server_of_migration_ok().label("server_ok"),
            sa.select(sa.func.max(journal.seq))
            .where(journal.migration_uuid == models.Migration.uuid)
            .correlate(models.Migration)
            .scalar_subquery()
            .label("last_seq"),
        )
    if event is not None:
        query = query.add_columns(*action_queries.step_event_columns(event == "host"))
    return query.where(models.Migration.uuid == sa.bindparam("uuid"))


def event_kind(run: steps.StepRun) -> str | None:
    """Which :func:`taken_query` columns ``run``'s event needs."""
    if run.event is None:
        return None
    return "host" if run.event.host is not None else "no host"


def taken_params(run: steps.StepRun) -> dict[str, Any]:
    """The parameters :func:`taken_query` binds for ``run``."""
    params: dict[str, Any] = {"uuid": run.migration_uuid}
    event = run.event
    if event is not None:
        params.update(action_queries.step_event_params(event.event, event.actions, event.host))
    return params


def read_into(run: steps.StepRun, row: Any) -> tuple[int | None, int | None] | None:
    """Keep on ``run`` what a :func:`taken_query` row brought (its server,
    its request spec); returns the event's action and open event (None: the
    run records no event), kept on the run too."""
    migration = row[0]
    if run.load_request_spec:
        run.request_spec = row[1]
    run.server_uuid = migration.server_uuid
    run.found = None if run.event is None else (row[-2], row[-1])
    return run.found


def read_zones_into(session: Any, run: steps.StepRun, migration: Any) -> None:
    """Keep on ``run`` the zones a move's scheduling asks about, read in the
    step's read (one statement more there, one transaction fewer after): the
    zone the request spec asks for, else the source host's
    (:func:`resize_sched.conductor.tasks.policy.zone_fields`)."""
    spec = run.request_spec
    asked = spec.availability_zone if spec is not None else None
    if asked is None and not migration.source_host:
        return
    host = None if asked is not None else migration.source_host
    run.zones = (host, aggregate_api.zone_map_in(session, host))


def not_due(migration: Any, server: Any, expected: list[str]) -> str:
    """Why a step expecting ``expected`` is not due on ``migration``."""
    if migration.status not in expected:
        return f"it is {migration.status}, not {' or '.join(expected)}"
    if migration.task_owner is not None:
        return "another step is running it"
    state = "deleted" if server is None or server.deleted_at else server.task_state
    return f"its server is {state}"
