"""Data API for migrations and their journal (a mixin of ``Database``).

The journal is what crash recovery reads: before each Placement write the
executor records the intended transition (:meth:`MigrationApi.journal_intend`),
then marks it ``applied`` or ``abandoned`` (:meth:`MigrationApi.journal_mark`;
within a conductor step, an ``applied`` waits for the step's next write: see
:mod:`resize_sched.db.steps`).
Holdings are JSON shaped ``{"server": {rp: {rc: n}}, "migration": {rp: {rc: n}},
"generations": {"server": int | None, "migration": int | None}}``.
"""

import functools
import json
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import make_transient_to_detached

from resize_sched import exception, resources
from resize_sched.db import action_api, models, steps
from resize_sched.db import journal as journals
from resize_sched.db.session import (
    CAS_KEY,
    SessionSource,
    cas_update,
    check_values,
    match,
    retry_on_deadlock,
    update_where,
)

LOG = logging.getLogger(__name__)


def _resources(value: Mapping[str, int], name: str) -> dict[str, int]:
    try:
        return resources.normalize(value)
    except (AttributeError, TypeError, ValueError) as exc:
        raise exception.Invalid(reason=f"bad {name}: {exc}") from None


def _check_migration_values(values: Mapping[str, Any]) -> None:
    if "status" in values and values["status"] not in models.MIGRATION_STATUSES:
        raise exception.Invalid(reason=f"unknown migration status {values['status']!r}")
    if "error_kind" in values and values["error_kind"] not in (*models.ERROR_KINDS, None):
        raise exception.Invalid(reason=f"unknown error kind {values['error_kind']!r}")
    if "migration_type" in values and values["migration_type"] not in models.MIGRATION_TYPES:
        raise exception.Invalid(reason=f"unknown migration type {values['migration_type']!r}")


def _statuses(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def server_not_deleting() -> list[sa.ColumnElement[bool]]:
    """WHERE clauses: the server is live and no delete has been asked for.

    A delete is recorded (``task_state = deleting``) before anything else
    happens to it; every later step's compare-and-swap carries these.
    """
    return list(_server_not_deleting())


@functools.cache
def _server_not_deleting() -> tuple[sa.ColumnElement[bool], ...]:
    # NOTE: built once: statements are kept by these very objects (cas_update).
    return (
        models.Server.deleted_at.is_(None),
        sa.or_(
            models.Server.task_state.is_(None),
            models.Server.task_state != models.TASK_DELETING,
        ),
    )


@functools.cache
def _server_of_migration_ok() -> sa.ColumnElement[bool]:
    return sa.exists().where(
        models.Server.uuid == models.Migration.server_uuid, *_server_not_deleting()
    )


@functools.cache
def _server_by_migration() -> sa.ColumnElement[bool]:
    """Finds the server of the migration whose uuid is bound to ``CAS_KEY``."""
    return (
        models.Server.uuid
        == sa.select(models.Migration.server_uuid)
        .where(models.Migration.uuid == sa.bindparam(CAS_KEY))
        .scalar_subquery()
    )


@functools.cache
def _taken_query(with_spec: bool, event: str | None) -> sa.Select[Any]:
    """The migration by uuid (bound to ``uuid``), with its server's request
    spec (or None) when ``with_spec``, and with the action and open event a
    step's event goes to (``event``: ``host``, ``no host``; see
    :func:`~resize_sched.db.action_api.step_event_columns`)."""
    spec = models.RequestSpec
    query = sa.select(models.Migration)
    if with_spec:
        query = query.add_columns(spec).outerjoin(
            spec, spec.server_uuid == models.Migration.server_uuid
        )
    if event is not None:
        query = query.add_columns(*action_api.step_event_columns(event == "host"))
    return query.where(models.Migration.uuid == sa.bindparam("uuid"))


@functools.cache
def _journal_lock_query(with_last_seq: bool) -> sa.Select[Any]:
    """The migration whose uuid is bound to ``m_uuid``, locked, with what
    :meth:`MigrationApi.journal_intend` checks (and its journal's last seq)."""
    journal = models.JournalEntry
    columns: list[Any] = [
        models.Migration.id,
        models.Migration.task_owner,
        models.Migration.server_uuid,
        models.Migration.status,
        models.Migration.updated_at,
        _server_of_migration_ok().label("server_live"),
    ]
    if with_last_seq:
        columns.append(
            sa.select(sa.func.max(journal.seq))
            .where(journal.migration_uuid == models.Migration.uuid)
            .scalar_subquery()
            .label("last_seq")
        )
    return (
        sa.select(*columns)
        .where(models.Migration.uuid == sa.bindparam("m_uuid"))
        .with_for_update()
    )


@functools.cache
def _journal_statements() -> tuple[sa.Select[Any], sa.Insert, sa.Update]:
    """The last seq of the journal of the migration bound to ``m_uuid``; an
    entry's insert; that migration's holdings update."""
    journal = models.JournalEntry
    table: sa.Table = models.Migration.__table__  # type: ignore[assignment]
    return (
        sa.select(sa.func.max(journal.seq)).where(
            journal.migration_uuid == sa.bindparam("m_uuid")
        ),
        sa.insert(journal.__table__),
        sa.update(table)
        .where(table.c.uuid == sa.bindparam("m_uuid"))
        .values(
            holdings=sa.bindparam("new_holdings", type_=table.c.holdings.type),
            updated_at=sa.bindparam("new_updated_at", type_=table.c.updated_at.type),
        ),
    )


def _detached(row: Any) -> Any:
    """``row``, built in Python, as if loaded and the session closed."""
    make_transient_to_detached(row)
    return row


def _copy(row: models.Migration, **changes: Any) -> models.Migration:
    """A detached copy of the migration ``row`` with ``changes`` applied."""
    values = {
        attr.key: getattr(row, attr.key) for attr in sa.inspect(models.Migration).column_attrs
    }
    values.update(changes)
    return _detached(models.Migration(**values))


def _unchanged_since(seen: Any, uuid: str, locked: Any) -> bool:
    """Whether the caller's row ``seen`` is the migration as ``locked`` now.

    Every change to a migration moves its ``updated_at`` on, so a row read
    (or copied by :func:`_copy`) with the same one, status and owner is the
    row as it is.
    """
    if not isinstance(seen, models.Migration) or sa.inspect(seen).unloaded:
        return False
    return (
        seen.uuid == uuid
        and seen.id == locked.id
        and seen.updated_at is not None
        and seen.updated_at == locked.updated_at
        and seen.status == locked.status
        and seen.task_owner == locked.task_owner
    )


class MigrationApi(SessionSource):
    """Migrations and the migration journal."""

    # -- migrations ------------------------------------------------------------------

    @retry_on_deadlock
    def migration_create(
        self,
        *,
        server_uuid: str,
        source_host: str,
        source_node: str | None,
        source_rp_uuid: str,
        old_flavor: dict[str, Any],
        new_flavor: dict[str, Any],
        old_resources: dict[str, int],
        new_resources: dict[str, int],
        claim_strategy: str,
        project_id: str,
        user_id: str,
        migration_type: str = models.MIGRATION_TYPE_RESIZE,
        status: str = models.MIGRATION_PRE_MIGRATING,
        uuid: str | None = None,
    ) -> models.Migration:
        """Record a new migration of a server.

        :param old_resources: what the old flavor holds, per resource class.
        :param new_resources: what the new flavor needs.
        :param claim_strategy: the strategy in force now; the migration keeps it.
        :param uuid: the Placement consumer uuid; a new one when omitted.
        :returns: the new migration.
        :raises resize_sched.exception.ServerNotFound: no such server.
        :raises resize_sched.exception.Invalid: a bad value; nothing written.
        :raises resize_sched.exception.Conflict: the uuid is taken.
        """
        _check_migration_values({"status": status, "migration_type": migration_type})
        if not isinstance(claim_strategy, str) or not claim_strategy:
            raise exception.Invalid(reason="a migration needs the claim strategy in force")
        migration = models.Migration(
            uuid=uuid or str(uuidlib.uuid4()),
            server_uuid=server_uuid,
            project_id=project_id,
            user_id=user_id,
            migration_type=migration_type,
            source_host=source_host,
            source_node=source_node,
            source_rp_uuid=source_rp_uuid,
            old_flavor=dict(old_flavor),
            new_flavor=dict(new_flavor),
            old_resources=_resources(old_resources, "old_resources"),
            new_resources=_resources(new_resources, "new_resources"),
            claim_strategy=claim_strategy,
            status=status,
            alternates=[],
            tried=[],
        )
        try:
            with self._writer() as session:
                if session.get(models.Server, server_uuid) is None:
                    raise exception.ServerNotFound(server_id=server_uuid)
                session.add(migration)
        except sa.exc.IntegrityError:
            raise exception.Conflict(reason=f"migration {migration.uuid} already exists") from None
        LOG.debug(
            "Created migration %s of server %s (%s)", migration.uuid, server_uuid, claim_strategy
        )
        return migration

    def migration_get(self, uuid: str) -> models.Migration:
        """Get a migration by uuid.

        :raises resize_sched.exception.MigrationNotFound: no such migration.
        """
        with self._reader() as session:
            migration = session.scalars(
                sa.select(models.Migration).where(models.Migration.uuid == uuid)
            ).first()
        if migration is None:
            raise exception.MigrationNotFound(migration_id=uuid)
        return migration

    def migration_get_by_id(self, id: int) -> models.Migration:
        """Get a migration by its integer id (the os-migrations id).

        :raises resize_sched.exception.MigrationNotFound: no such migration.
        """
        with self._reader() as session:
            migration = session.get(models.Migration, id)
        if migration is None:
            raise exception.MigrationNotFound(migration_id=id)
        return migration

    def migration_list(
        self,
        *,
        server_uuid: str | None = None,
        statuses: Iterable[str] | None = None,
    ) -> list[models.Migration]:
        """List migrations, oldest first.

        :param server_uuid: only this server's.
        :param statuses: only those in one of these statuses.
        """
        query = sa.select(models.Migration)
        if server_uuid is not None:
            query = query.where(models.Migration.server_uuid == server_uuid)
        if statuses is not None:
            query = query.where(models.Migration.status.in_(_statuses(statuses)))
        with self._reader() as session:
            return list(session.scalars(query.order_by(models.Migration.id)))

    def migration_list_in_flight(self) -> list[models.Migration]:
        """Migrations crash recovery and the heal command must look at, oldest first.

        :returns: those in an in-flight status, plus ``error`` ones whose
            holdings a failed restore left ``missing``.
        """
        query = sa.select(models.Migration).where(
            sa.or_(
                models.Migration.status.in_(models.IN_FLIGHT_STATUSES),
                sa.and_(
                    models.Migration.status == models.MIGRATION_ERROR,
                    models.Migration.missing.is_not(None),
                ),
            )
        )
        with self._reader() as session:
            return list(session.scalars(query.order_by(models.Migration.id)))

    def migration_get_in_progress_for_server(self, server_uuid: str) -> models.Migration | None:
        """The server's migration in flight, if any (the newest).

        :returns: the migration or None.
        """
        with self._reader() as session:
            return session.scalars(
                sa.select(models.Migration)
                .where(
                    models.Migration.server_uuid == server_uuid,
                    models.Migration.status.in_(models.IN_FLIGHT_STATUSES),
                )
                .order_by(models.Migration.id.desc())
            ).first()

    @retry_on_deadlock
    def migration_update(
        self,
        uuid: str,
        /,
        *,
        expected_status: str | Iterable[str] | None = None,
        operation: str = "update",
        owner: str | None = None,
        **values: Any,
    ) -> models.Migration:
        """Update a migration, if its status is still one expected (compare-and-swap).

        :param expected_status: a status or several; None: any.
        :param operation: what the caller is doing, for the conflict message.
        :param owner: when given, the step token that must still own the
            migration (see :meth:`migration_acquire`).
        :param values: columns to set.
        :returns: the migration as updated.
        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.MigrationStateConflict: another status.
        :raises resize_sched.exception.StepNotDue: ``owner`` no longer owns it.
        :raises resize_sched.exception.Invalid: an unknown column or value.
        """
        check_values(models.Migration, values, what="migration")
        _check_migration_values(values)
        for key in ("old_resources", "new_resources"):
            if key in values:
                values[key] = _resources(values[key], key)
        conditions = []
        expected = None if expected_status is None else _statuses(expected_status)
        if expected is not None:
            conditions.append(models.Migration.status.in_(expected))
        if owner is not None:
            conditions.append(models.Migration.task_owner == owner)
        with self._writer() as session:
            changed, migration = update_where(session, models.Migration, uuid, conditions, values)
        if migration is None:
            raise exception.MigrationNotFound(migration_id=uuid)
        if changed == 0 and owner is not None and migration.task_owner != owner:
            raise exception.StepNotDue(
                migration_id=uuid, step=operation, reason="another step or a delete took it over"
            )
        if changed == 0:
            raise exception.MigrationStateConflict(
                migration_id=uuid,
                actual=migration.status,
                expected=" or ".join(expected or ()),
                operation=operation,
            )
        return migration

    @retry_on_deadlock
    def migration_touch(self, uuid: str, *, seen: models.Migration) -> models.Migration:
        """Stamp ``updated_at`` now, if the migration is unchanged since ``seen``.

        For a worker taking a stalled migration on: of several that saw the
        same row, exactly one wins.

        :raises resize_sched.exception.MigrationStateConflict: it changed.
        """
        conditions = [
            models.Migration.status == seen.status,
            match(models.Migration.updated_at, seen.updated_at),
        ]
        with self._writer() as session:
            # NOTE: whoever owned it (a conductor that died mid-step) owns it
            # no longer; the worker taking it on re-runs the step.
            changed, migration = update_where(
                session,
                models.Migration,
                uuid,
                conditions,
                {"updated_at": models.utcnow(), "task_owner": None},
            )
        if migration is None:
            raise exception.MigrationNotFound(migration_id=uuid)
        if changed == 0:
            raise exception.MigrationStateConflict(
                migration_id=uuid,
                actual=f"{migration.status} (changed at {migration.updated_at})",
                expected=f"{seen.status} (changed at {seen.updated_at})",
                operation="take on the stalled migration",
            )
        return migration

    # -- steps ------------------------------------------------------------------------

    def migration_acquire(
        self, uuid: str, /, *, expected_status: str | Iterable[str], token: str, step: str
    ) -> models.Migration:
        """Take the migration for one conductor step (compare-and-swap).

        It succeeds only while the migration is in one of ``expected_status``,
        no other step owns it and its server is live with no delete asked
        for: of two deliveries of one message exactly one runs, and a step
        that arrives late (or after a delete) runs not at all.

        :param token: the step's own token, written to ``task_owner``.
        :param step: the step's name, for messages.
        :returns: the migration, owned by ``token``.
        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.StepNotDue: the step is not due.
        """
        return self.step_begin(steps.StepRun(uuid, token, step), expected_status)

    @retry_on_deadlock
    def step_begin(
        self, run: steps.StepRun, expected_status: str | Iterable[str]
    ) -> models.Migration:
        """:meth:`migration_acquire` for ``run``, opening its event in the same
        transaction (``run.event_id``); with ``run.load_request_spec`` the
        same read that returns the migration brings its server's request
        spec (``run.request_spec``).

        :returns: the migration, owned by ``run.token``.
        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.StepNotDue: the step is not due.
        """
        uuid = run.migration_uuid
        expected = _statuses(expected_status)
        with self._writer() as session:
            changed, migration = cas_update(
                session,
                models.Migration,
                uuid,
                {"task_owner": run.token},
                expected=[("status", expected), ("task_owner", None)],
                fixed=(_server_of_migration_ok(),),
                reload=False,
            )
            server = None
            if changed:
                migration, found = self._taken(session, run)
                steps.begin_in(session, run, migration.server_uuid, found)
            elif migration is not None:
                server = session.get(models.Server, migration.server_uuid)
        if migration is None:
            raise exception.MigrationNotFound(migration_id=uuid)
        if changed == 0:
            if migration.status not in expected:
                reason = f"it is {migration.status}, not {' or '.join(expected)}"
            elif migration.task_owner is not None:
                reason = "another step is running it"
            else:
                state = "deleted" if server is None or server.deleted_at else server.task_state
                reason = f"its server is {state}"
            raise exception.StepNotDue(migration_id=uuid, step=run.name, reason=reason)
        return migration

    @staticmethod
    def _taken(
        session: Any, run: steps.StepRun
    ) -> tuple[models.Migration, tuple[int | None, int | None] | None]:
        """Within ``session``: the migration ``run`` has just taken, read back
        with its server's request spec when the run asks for it, and the
        action and open event its event goes to.

        :returns: the migration, and (action id, open event id) or None
            when the run records no event.
        """
        params: dict[str, Any] = {"uuid": run.migration_uuid}
        event = run.event
        kind = None
        if event is not None:
            kind = "host" if event.host is not None else "no host"
            params.update(action_api.step_event_params(event.event, event.actions, event.host))
        row = session.execute(_taken_query(run.load_request_spec, kind), params).one()
        migration = row[0]
        if run.load_request_spec:
            run.request_spec = row[1]
        run.server_uuid = migration.server_uuid
        return migration, (None if event is None else (row[-2], row[-1]))

    def migration_release(self, uuid: str, /, *, token: str) -> None:
        """Give the migration back after a step, if ``token`` still owns it."""
        self.step_end(steps.StepRun(uuid, token, "release"))

    @retry_on_deadlock
    def step_end(
        self,
        run: steps.StepRun,
        *,
        error: BaseException | None = None,
        not_due: bool = False,
    ) -> None:
        """End ``run`` in one transaction: give the migration back (if the
        run still owns it), mark its written entries ``applied`` and record
        its event (``Error`` with ``error``; dropped when ``not_due``).

        Nothing happens for a run whose last write already ended it.
        """
        if run.ended:
            return
        with self._writer() as session:
            session.execute(
                sa.update(models.Migration)
                .where(
                    models.Migration.uuid == run.migration_uuid,
                    models.Migration.task_owner == run.token,
                )
                .values(task_owner=None)
                .execution_options(synchronize_session=False)
            )
            server_uuid = run.server_uuid
            if server_uuid is None and run.event is not None:
                server_uuid = session.scalar(
                    sa.select(models.Migration.server_uuid).where(
                        models.Migration.uuid == run.migration_uuid
                    )
                )
            steps.end_in(session, run, server_uuid, error=error, not_due=not_due)
        run.ended = True
        run.applied.clear()

    @retry_on_deadlock
    def migration_advance(
        self,
        uuid: str,
        /,
        *,
        token: str | None = None,
        expected_status: str | Iterable[str],
        step: str,
        server_values: Mapping[str, Any] | None = None,
        server_expected: Mapping[str, Any] | None = None,
        migration_expected: Mapping[str, Any] | None = None,
        ends: steps.StepRun | None = None,
        reload: bool = True,
        **values: Any,
    ) -> models.Migration | None:
        """End a step: move the migration and its server on, in one transaction.

        Both rows change or neither does: the migration only while ``token``
        owns it (None: while no step owns it) in one of ``expected_status``;
        the server only while it is live, no delete has been asked for and it
        matches ``server_expected``.
        A delete recorded meanwhile therefore always wins.

        :param token: the step that must own the migration; None: no step
            may own it. Taken from ``ends`` when that is given.
        :param server_values: server columns to set (none: the server is
            only checked).
        :param migration_expected: more migration columns that must match.
        :param ends: the step run this write ends, successfully: in the same
            transaction its entries are marked, its event records ``Success``
            and the migration is given back (the run's token must own it).
        :param reload: read the migration back and return it; False (a
            caller with no use for it): one statement less, returns None.
        :param values: migration columns to set.
        :returns: the migration as updated, or None when not ``reload``.
        :raises resize_sched.exception.StepNotDue: either row moved on;
            nothing was written.
        """
        check_values(models.Migration, values, what="migration")
        _check_migration_values(values)
        server_values = dict(server_values or {})
        server_expected = dict(server_expected or {})
        check_values(models.Server, server_values, what="server")
        check_values(models.Server, server_expected, what="server", compared=True)
        migration_expected = dict(migration_expected or {})
        check_values(models.Migration, migration_expected, what="migration", compared=True)
        if server_values.get("status") not in (None, *models.SERVER_STATUSES):
            raise exception.Invalid(reason=f"unknown server status {server_values['status']!r}")
        expected = _statuses(expected_status)
        server_uuid: str | None = None
        if ends is not None:
            if token is not None and token != ends.token:
                raise exception.Invalid(reason="a step run ends with its own token")
            token = ends.token
            server_uuid = ends.server_uuid
            values["task_owner"] = None
        with self._writer() as session:
            changed, migration = cas_update(
                session,
                models.Migration,
                uuid,
                values,
                expected=[
                    ("status", expected),
                    ("task_owner", token),
                    *migration_expected.items(),
                ],
                reload=reload,
            )
            if changed == 0:
                if migration is None:
                    raise exception.MigrationNotFound(migration_id=uuid)
                raise exception.StepNotDue(
                    migration_id=uuid,
                    step=step,
                    reason=f"it is {migration.status}"
                    + ("" if migration.task_owner == token else ", taken over"),
                )
            if migration is not None:
                server_uuid = migration.server_uuid
            # NOTE: not read back, and not known from the run: the server is
            # found by the migration, in the same statement.
            server_changed, server = cas_update(
                session,
                models.Server,
                server_uuid or uuid,
                server_values or {"updated_at": models.utcnow()},
                expected=server_expected.items(),
                fixed=_server_not_deleting(),
                key=None if server_uuid else _server_by_migration(),
                reload=False,
            )
            if server_changed == 0:
                state = "deleted" if server is None or server.deleted_at else server.task_state
                # NOTE: raising inside the transaction rolls the migration back too.
                raise exception.StepNotDue(
                    migration_id=uuid, step=step, reason=f"its server is {state}"
                )
            if ends is not None:
                if server_uuid is None and ends.event is not None:
                    server_uuid = session.scalar(
                        sa.select(models.Migration.server_uuid).where(
                            models.Migration.uuid == uuid
                        )
                    )
                steps.end_in(session, ends, server_uuid)
        if ends is not None:
            ends.ended = True
            ends.applied.clear()
        return migration

    @retry_on_deadlock
    def server_record_step_fault(
        self,
        server_uuid: str,
        migration_uuid: str,
        *,
        expected_status: str,
        host: str | None,
        host_columns: tuple[str, ...],
        fault_message: str,
    ) -> bool:
        """Record a compute host's failure of a resize's last part, if still due.

        One compare-and-swap: the server's ``fault_message`` is set only while
        the server is live, idle (or still deciding) and no delete is asked
        for, ``migration_uuid`` is its newest migration, in
        ``expected_status``, and ``host`` (when given) is one the failed
        part runs on. A late or replayed report, from before the server
        moved on (resized again, deleted), changes nothing.

        :param expected_status: ``confirmed`` for a confirm, ``reverted`` for
            a revert: the status the conductor left before casting the part.
        :param host_columns: the migration's columns naming the hosts the part
            runs on (``source_host``; ``dest_host`` and ``source_host``).
        :returns: whether the fault was recorded.
        """
        newer = sa.orm.aliased(models.Migration)
        mig = sa.orm.aliased(models.Migration)
        conditions: list[sa.ColumnElement[bool]] = [
            mig.uuid == migration_uuid,
            mig.server_uuid == models.Server.uuid,
            mig.status == expected_status,
            ~sa.exists().where(newer.server_uuid == mig.server_uuid, newer.id > mig.id),
        ]
        if host is not None:
            conditions.append(sa.or_(*(getattr(mig, c) == host for c in host_columns)))
        with self._writer() as session:
            result = session.execute(
                sa.update(models.Server)
                .where(
                    models.Server.uuid == server_uuid,
                    *_server_not_deleting(),
                    match(
                        models.Server.task_state,
                        [None, models.TASK_RESIZE_CONFIRMING, models.TASK_RESIZE_REVERTING],
                    ),
                    sa.exists().where(*conditions),
                )
                .values(fault_message=fault_message, fault_at=models.utcnow())
                .execution_options(synchronize_session=False)
            )
        return bool(result.rowcount)

    def migration_close_for_delete(self, session: Any, server_uuid: str) -> None:
        """Within ``session``: end the server's resize in flight, for a delete."""
        session.execute(
            sa.update(models.Migration)
            .where(
                models.Migration.server_uuid == server_uuid,
                models.Migration.status.in_(models.IN_FLIGHT_STATUSES),
            )
            .values(
                status=models.MIGRATION_ERROR,
                error_kind=models.ERROR_FAILED,
                error_reason="server deleted",
                task_owner=None,
                updated_at=models.utcnow(),
            )
            .execution_options(synchronize_session=False)
        )

    # -- journal ---------------------------------------------------------------------

    @retry_on_deadlock
    def journal_intend(
        self,
        migration_uuid: str,
        *,
        phase: str,
        before: dict[str, Any],
        target: dict[str, Any],
        owner: str | None = None,
        releasing: bool = False,
        holdings: Mapping[str, Any] | None = None,
        applied: list[int] | None = None,
        seen: models.Migration | None = None,
    ) -> models.JournalEntry:
        """Record a transition about to be written to Placement.

        Under the migration's row lock it also checks the write is still
        wanted: the step ``owner`` still owns the migration, and (unless the
        transition only releases) the server is live with no delete asked
        for. A retry after a generation conflict journals again, so it is
        checked again: nothing a delete emptied is re-created.

        With ``holdings``, the same transaction records them as the
        migration's known holdings: what the write leads to, so that a write
        that succeeds needs no commit but its entry's ``applied``. While the
        entry is ``intended`` they are only what is expected (crash recovery
        and the executor settle an intended entry by reading Placement); the
        writer puts back what is held if the write is refused.

        :param phase: the strategy phase (e.g. ``prepare``, ``claim``, ``revert``).
        :param before: the holdings the transition starts from.
        :param target: the holdings it leads to.
        :param owner: the step token that must own the migration (None: any).
        :param releasing: the target holds nothing, so it may always go ahead.
        :param holdings: the migration's holdings once the write lands.
        :param applied: entries of the same step whose writes landed, marked
            ``applied`` in the same transaction (the list is emptied).
        :param seen: the caller's copy of the migration row. When the row
            has not changed since (its ``updated_at``, status and owner are
            the same under the lock), the migration as updated is that copy
            with the new holdings, and is not read back.
        :returns: the entry, ``intended``, numbered after the migration's last;
            with ``holdings``, its ``migration`` attribute is the migration
            as updated.
        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.StepNotDue: the write is no longer wanted.
        :raises resize_sched.exception.Invalid: before/target not mappings.
        """
        journals.check_intent(phase, before, target)
        for attempt in range(1, journals.SEQ_ATTEMPTS + 1):
            try:
                with self._writer() as session:
                    entry, updated = self._journal_append(
                        session,
                        migration_uuid,
                        phase=phase,
                        before=before,
                        target=target,
                        owner=owner,
                        releasing=releasing,
                        holdings=holdings,
                        applied=applied,
                        seen=seen,
                        # NOTE: a retry reads the last seq on its own (below).
                        seq_in_lock=attempt == 1,
                    )
                if updated is not None:
                    entry.migration = updated  # type: ignore[attr-defined]
                if applied:
                    applied.clear()
                return entry
            except sa.exc.IntegrityError:
                # NOTE: a concurrent writer took the same seq; count again.
                LOG.debug("Journal seq race on migration %s (attempt %d)", migration_uuid, attempt)
        raise exception.Conflict(
            reason=f"could not append to the journal of migration {migration_uuid}"
        )

    def _journal_append(
        self,
        session: Any,
        migration_uuid: str,
        *,
        phase: str,
        before: Mapping[str, Any],
        target: Mapping[str, Any],
        owner: str | None,
        releasing: bool,
        holdings: Mapping[str, Any] | None,
        applied: list[int] | None,
        seen: models.Migration | None,
        seq_in_lock: bool,
    ) -> tuple[models.JournalEntry, models.Migration | None]:
        """Within ``session``: one attempt at :meth:`journal_intend`.

        :param seq_in_lock: read the last seq in the statement that locks
            the migration (one statement less) instead of after it.
        :returns: the entry and, with ``holdings``, the migration as updated.
        :raises sqlalchemy.exc.IntegrityError: another writer took the seq.
        """
        # NOTE: locking the migration row serialises appenders to one journal
        # (MySQL, PostgreSQL; SQLite has one writer anyway). The read of the
        # last seq is plain, never a locking read: on MySQL a locking read
        # takes a gap lock on an empty journal, and two resizes' first entries
        # would deadlock each other (a subquery of a SELECT ... FOR UPDATE is
        # not locked). Read in the locking statement, its snapshot may predate
        # the lock (PostgreSQL takes it when the statement starts; so may
        # InnoDB): a seq read stale is one another writer has taken, so the
        # insert fails on the (migration_uuid, seq) key and is retried, never
        # recorded wrong. A retry reads the seq in a statement of its own,
        # after the lock: its snapshot is newer than the previous appender's
        # commit, even under MySQL's REPEATABLE READ.
        params = {"m_uuid": migration_uuid}
        migration = session.execute(_journal_lock_query(seq_in_lock), params).first()
        if migration is None:
            raise exception.MigrationNotFound(migration_id=migration_uuid)
        self._check_still_wanted(migration_uuid, migration, phase, owner, releasing)
        last_seq, insert, record_holdings = _journal_statements()
        last = migration.last_seq if seq_in_lock else session.scalar(last_seq, params)
        now = models.utcnow()
        values = {
            "migration_uuid": migration_uuid,
            "seq": (last or 0) + 1,
            "phase": phase,
            "before": dict(before),
            "target": dict(target),
            "state": models.JOURNAL_INTENDED,
            "detail": None,
            "created_at": now,
        }
        (entry_id,) = session.execute(insert, values).inserted_primary_key
        entry = _detached(models.JournalEntry(id=entry_id, updated_at=None, **values))
        journals.mark_applied_in(session, models.JournalEntry, applied or [])
        if holdings is None:
            return entry, None
        recorded = json.loads(json.dumps(dict(holdings)))
        session.execute(
            record_holdings, {**params, "new_holdings": recorded, "new_updated_at": now}
        )
        if _unchanged_since(seen, migration_uuid, migration):
            # NOTE: the row is the caller's but for what was just written,
            # so it needs no reading back.
            assert seen is not None
            return entry, _copy(seen, holdings=recorded, updated_at=now)
        updated = session.scalars(
            sa.select(models.Migration)
            .where(models.Migration.uuid == migration_uuid)
            .execution_options(populate_existing=True)
        ).one()
        return entry, updated

    @staticmethod
    def _check_still_wanted(
        migration_uuid: str, migration: Any, phase: str, owner: str | None, releasing: bool
    ) -> None:
        if owner is not None and migration.task_owner != owner:
            raise exception.StepNotDue(
                migration_id=migration_uuid,
                step=phase,
                reason="another step or a delete took the migration over",
            )
        if not releasing and not migration.server_live:
            raise exception.StepNotDue(
                migration_id=migration_uuid, step=phase, reason="its server is being deleted"
            )

    @retry_on_deadlock
    def journal_mark(
        self, entry_id: int, state: str, detail: str | None = None
    ) -> models.JournalEntry:
        """Mark an intended entry ``applied`` or ``abandoned``.

        :param detail: why, for an abandoned one (or any note).
        :returns: the entry as updated.
        :raises resize_sched.exception.Invalid: another target state.
        :raises resize_sched.exception.NotFound: no such entry.
        :raises resize_sched.exception.Conflict: the entry is no longer intended.
        """
        journals.check_mark(state)
        with self._writer() as session:
            result = session.execute(
                sa.update(models.JournalEntry)
                .where(
                    models.JournalEntry.id == entry_id,
                    models.JournalEntry.state == models.JOURNAL_INTENDED,
                )
                .values(state=state, detail=detail)
                .execution_options(synchronize_session=False)
            )
            entry = session.get(models.JournalEntry, entry_id, populate_existing=True)
        if entry is None:
            raise exception.NotFound(what=f"journal entry {entry_id}")
        if result.rowcount == 0:
            raise exception.Conflict(
                reason=f"journal entry {entry_id} is {entry.state}; only an intended "
                f"entry can be marked {state}"
            )
        return entry

    def journal_list(self, migration_uuid: str) -> list[models.JournalEntry]:
        """A migration's journal, in order.

        :returns: the entries by ``seq`` (empty for an unknown migration).
        """
        with self._reader() as session:
            return journals.entries_in(session, models.JournalEntry, migration_uuid)

    def journal_pending(self) -> list[models.JournalEntry]:
        """Every entry still ``intended``, over all migrations, oldest first."""
        with self._reader() as session:
            return journals.pending_in(session, models.JournalEntry)
