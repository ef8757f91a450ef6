"""Data API for conductor steps on a migration (a mixin of ``Database``).

A conductor step owns the migration while it runs: it takes it
(:meth:`StepApi.migration_acquire`, :meth:`StepApi.step_begin`: a
compare-and-swap on the expected status and no owner, the server live with
no delete asked for), moves it and its server on together
(:meth:`StepApi.migration_advance`: both rows or neither), and gives it back
(:meth:`StepApi.migration_release`, :meth:`StepApi.step_end`). The run's
instance-action event and journal marks ride in the same transactions (see
:mod:`resize_sched.db.steps`). A compute host's failure of a resize's last
part is recorded on the server here too (:meth:`StepApi.server_record_step_fault`),
under the same "still due" conditions.
"""

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import models, step_reads, steps
from resize_sched.db.cas import cas_update, check_values, match
from resize_sched.db.migration_checks import (
    check_migration_values,
    server_not_deleting_clauses,
    server_of_migration_ok,
    status_list,
)
from resize_sched.db.retry import retry_on_deadlock
from resize_sched.db.session import SessionSource, writes


class StepApi(SessionSource):
    """Conductor steps: taking, advancing and giving back a migration."""

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
        expected = status_list(expected_status)
        if run.take_late:
            return self._step_read(run, expected)
        with self._writer() as session:
            changed, migration = cas_update(
                session,
                models.Migration,
                uuid,
                {"task_owner": run.token},
                expected=[("status", expected), ("task_owner", None)],
                fixed=(server_of_migration_ok(),),
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
            raise exception.StepNotDue(
                migration_id=uuid,
                step=run.name,
                reason=step_reads.not_due(migration, server, expected),
            )
        run.taken = True
        return migration

    def _step_read(self, run: steps.StepRun, expected: list[str]) -> models.Migration:
        """:meth:`step_begin` for a run that takes the migration late: one
        read that checks the step is due, as the take will, and brings what
        the take would (the request spec, the event's action).

        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.StepNotDue: the step is not due.
        """
        with self._reader() as session:
            row = session.execute(
                step_reads.taken_query(
                    run.load_request_spec, step_reads.event_kind(run), with_server_ok=True
                ),
                step_reads.taken_params(run),
            ).first()
            if row is None:
                raise exception.MigrationNotFound(migration_id=run.migration_uuid)
            migration = row[0]
            if migration.status in expected and migration.task_owner is None and row.server_ok:
                step_reads.read_into(run, row)
                run.expected_status = tuple(expected)
                run.last_seq = row.last_seq or 0
                if run.load_request_spec:
                    step_reads.read_zones_into(session, run, migration)
                return migration
            server = session.get(models.Server, migration.server_uuid)
        raise exception.StepNotDue(
            migration_id=run.migration_uuid,
            step=run.name,
            reason=step_reads.not_due(migration, server, expected),
        )

    @retry_on_deadlock
    def step_take(self, run: steps.StepRun) -> None:
        """Take the migration now for a run that was to take it late
        (nothing when it owns it already): a transaction of its own, for a
        write that is not a journal entry.

        :raises resize_sched.exception.StepNotDue: the step is no longer due.
        """
        if run.taken:
            return
        try:
            with self._writer() as session:
                steps.take_in(session, run)
        except BaseException:
            run.event_id = None  # rolled back with the take
            raise
        run.taken = True

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
        row = session.execute(
            step_reads.taken_query(run.load_request_spec, step_reads.event_kind(run)),
            step_reads.taken_params(run),
        ).one()
        return row[0], step_reads.read_into(run, row)

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
        if not run.taken:
            # NOTE: a late take that never came: there is nothing to give
            # back, and nothing to record unless the step failed.
            if error is not None and not not_due and run.event is not None:
                self._step_end_untaken(run, error)
            run.ended = True
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

    @writes
    def _step_end_untaken(
        self, session: Session, run: steps.StepRun, error: BaseException
    ) -> None:
        """The event of a run that failed before its late take: ``Error``,
        while the step is still due (the migration in the status the run
        read, with no owner); a duplicate whose twin took the migration
        meanwhile records nothing, as if it had found it taken at its start."""
        still_due = session.scalar(
            sa.select(sa.func.count())
            .select_from(models.Migration)
            .where(
                models.Migration.uuid == run.migration_uuid,
                models.Migration.status.in_(run.expected_status),
                models.Migration.task_owner.is_(None),
            )
        )
        if still_due:
            steps.end_in(session, run, run.server_uuid, error=error)

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
        group_host: str | None = None,
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
        :param group_host: run the late check of the server's group
            (:meth:`~resize_sched.db.group_api.GroupApi.group_check_host_in`)
            for this destination, in this transaction.
        :param values: migration columns to set.
        :returns: the migration as updated, or None when not ``reload``.
        :raises resize_sched.exception.StepNotDue: either row moved on;
            nothing was written.
        :raises resize_sched.exception.GroupPolicyViolation: the late check
            refused ``group_host``; nothing was written.
        """
        check_values(models.Migration, values, what="migration")
        check_migration_values(values)
        server_values = dict(server_values or {})
        server_expected = dict(server_expected or {})
        check_values(models.Server, server_values, what="server")
        check_values(models.Server, server_expected, what="server", compared=True)
        migration_expected = dict(migration_expected or {})
        check_values(models.Migration, migration_expected, what="migration", compared=True)
        if server_values.get("status") not in (None, *models.SERVER_STATUSES):
            raise exception.Invalid(reason=f"unknown server status {server_values['status']!r}")
        expected = status_list(expected_status)
        server_uuid: str | None = None
        if ends is not None:
            if token is not None and token != ends.token:
                raise exception.Invalid(reason="a step run ends with its own token")
            # NOTE: a run that was to take the migration late and wrote
            # nothing ends with the take's compare-and-swap: no owner.
            token = ends.owner
            if not ends.taken:
                expected = [status for status in expected if status in ends.expected_status]
            server_uuid = ends.server_uuid
            values["task_owner"] = None
        with self._writer() as session:
            if group_host is not None:
                # NOTE: first in the transaction, so that MariaDB's snapshot
                # is taken after the group's lock and sees the member that
                # won a race; raising rolls everything back.
                self.group_check_host_in(  # type: ignore[attr-defined]
                    session,
                    server_uuid
                    or session.scalar(
                        sa.select(models.Migration.server_uuid).where(
                            models.Migration.uuid == uuid
                        )
                    ),
                    group_host,
                )
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
                fixed=server_not_deleting_clauses(),
                key=None if server_uuid else step_reads.server_by_migration(),
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
                    *server_not_deleting_clauses(),
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
