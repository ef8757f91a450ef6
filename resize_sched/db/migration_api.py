"""Data API for migration records (a mixin of ``Database``).

Creating a migration, reading and listing migrations (by uuid, by the
os-migrations id, a server's, those in flight), and the plain
compare-and-swap updates of one: :meth:`MigrationApi.migration_update`
(expected status, optionally the owning step), :meth:`MigrationApi.migration_touch`
(taking a stalled migration on) and ending a server's resize for a delete.

The rest of a migration's data API lives beside it:

* :mod:`resize_sched.db.step_api`: conductor steps taking, advancing and
  giving back a migration (ownership and the migration-plus-server
  compare-and-swaps);
* :mod:`resize_sched.db.migration_journal_api`: the journal of Placement
  writes and the holdings recorded with it;
* :mod:`resize_sched.db.migration_checks`: the value checks and WHERE
  clauses the three share.
"""

import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging

from resize_sched import exception, resources
from resize_sched.db import models
from resize_sched.db.cas import check_values, match, update_where
from resize_sched.db.migration_checks import check_migration_values, status_list
from resize_sched.db.retry import commit_may_have_landed, retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource

LOG = logging.getLogger(__name__)


def _resources(value: Mapping[str, int], name: str) -> dict[str, int]:
    try:
        return resources.normalize(value)
    except (AttributeError, TypeError, ValueError) as exc:
        raise exception.Invalid(reason=f"bad {name}: {exc}") from None


class MigrationApi(SessionSource):
    """Migration records: create, read, list, update."""

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
        requested_host: str | None = None,
    ) -> models.Migration:
        """Record a new migration of a server.

        :param old_resources: what the old flavor holds, per resource class.
        :param new_resources: what the new flavor needs.
        :param claim_strategy: the strategy in force now; the migration keeps it.
        :param uuid: the Placement consumer uuid; a new one when omitted.
        :param requested_host: the only host a cold migration may go to.
        :returns: the new migration.
        :raises resize_sched.exception.ServerNotFound: no such server.
        :raises resize_sched.exception.Invalid: a bad value; nothing written.
        :raises resize_sched.exception.Conflict: the uuid is taken.
        """
        check_migration_values({"status": status, "migration_type": migration_type})
        if not isinstance(claim_strategy, str) or not claim_strategy:
            raise exception.Invalid(reason="a migration needs the claim strategy in force")
        # NOTE: the uuid is chosen once, outside the retried insert: a run
        # again after a COMMIT whose answer was lost finds its own row.
        columns = dict(
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
            requested_host=requested_host,
            created_at=models.utcnow(),
        )
        migration = self._migration_insert(columns)
        LOG.debug(
            "Created migration %s of server %s (%s)", migration.uuid, server_uuid, claim_strategy
        )
        return migration

    @retry_on_deadlock
    def _migration_insert(self, columns: dict[str, Any]) -> models.Migration:
        migration = models.Migration(**columns)
        try:
            with self._writer() as session:
                if session.get(models.Server, columns["server_uuid"]) is None:
                    raise exception.ServerNotFound(server_id=columns["server_uuid"])
                session.add(migration)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                with self._reader() as session:
                    found = session.scalars(
                        sa.select(models.Migration).where(models.Migration.uuid == columns["uuid"])
                    ).first()
                if found is not None and all(getattr(found, k) == v for k, v in columns.items()):
                    LOG.info("Migration %s was created by an earlier run", found.uuid)
                    return found
            raise exception.Conflict(reason=f"migration {migration.uuid} already exists") from None
        return migration

    def migration_get(self, uuid: str) -> models.Migration:
        """Get a migration by uuid.

        :raises resize_sched.exception.MigrationNotFound: no such migration.
        """
        migration = self._first(models.Migration, uuid=uuid)
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
        return self._list(
            models.Migration,
            None if statuses is None else models.Migration.status.in_(status_list(statuses)),
            optional={"server_uuid": server_uuid},
            order_by=(models.Migration.id,),
        )

    def migration_list_in_flight(self) -> list[models.Migration]:
        """Migrations crash recovery and the heal command must look at, oldest first.

        :returns: those in an in-flight status, plus ``error`` ones (an
            evacuation's ``failed`` ones) whose
            holdings a failed restore left ``missing``.
        """
        return self._list(
            models.Migration,
            sa.or_(
                models.Migration.status.in_(models.IN_FLIGHT_STATUSES),
                sa.and_(
                    models.Migration.status.in_((models.MIGRATION_ERROR, models.MIGRATION_FAILED)),
                    models.Migration.missing.is_not(None),
                ),
            ),
            order_by=(models.Migration.id,),
        )

    def migration_get_in_progress_for_server(self, server_uuid: str) -> models.Migration | None:
        """The server's migration in flight, if any (the newest).

        :returns: the migration or None.
        """
        return self._first(
            models.Migration,
            models.Migration.status.in_(models.IN_FLIGHT_STATUSES),
            server_uuid=server_uuid,
            order_by=(models.Migration.id.desc(),),
        )

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
        check_migration_values(values)
        for key in ("old_resources", "new_resources"):
            if key in values:
                values[key] = _resources(values[key], key)
        conditions = []
        expected = None if expected_status is None else status_list(expected_status)
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
