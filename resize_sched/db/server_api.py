"""Data API for servers (a mixin of ``Database``).

Creating a server record, reading and listing servers within a project scope
(:mod:`resize_sched.db.project_scope`), the compare-and-swaps that change a
server's state (:meth:`ServerApi.server_update`, :meth:`ServerApi.server_touch`,
:meth:`ServerApi.server_start_resize`), and deleting one: the delete is
recorded first (:meth:`ServerApi.server_begin_delete`, which wins over every
later step), carried out later (:meth:`ServerApi.server_delete`), and found
again by the sweep if it was not (:meth:`ServerApi.server_list_delete_unfinished`).
The conductor steps' compare-and-swaps over a migration and its server live in
:mod:`resize_sched.db.step_api`.
"""

import uuid as uuidlib
from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import Session

from resize_sched import exception, resources
from resize_sched.db import action_names, models
from resize_sched.db.cas import check_values, describe, describe_expected, match, update_where
from resize_sched.db.migration_checks import no_restore_in_flight
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope, project_condition
from resize_sched.db.retry import commit_may_have_landed, found_done, retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource
from resize_sched.db.values import text

LOG = logging.getLogger(__name__)


def _flavor_snapshot(flavor: models.Flavor | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(flavor, models.Flavor):
        return flavor.to_snapshot()
    snapshot = dict(flavor)
    try:
        # NOTE: read as stored: a revert writes back a snapshot whose NUMA
        # specs this version refuses but which the server was claimed with.
        resources.stored_request(snapshot)
    except (KeyError, TypeError, ValueError) as exc:
        raise exception.InvalidFlavor(reason=f"bad flavor snapshot: {exc}") from None
    return snapshot


class ServerApi(SessionSource):
    """Servers."""

    # -- create, read, list ------------------------------------------------------

    def server_create(
        self,
        *,
        name: str,
        project_id: str,
        user_id: str,
        flavor: models.Flavor | Mapping[str, Any],
        uuid: str | None = None,
        status: str = models.STATUS_BUILD,
        vm_state: str = models.VM_BUILDING,
        task_state: str | None = models.TASK_SCHEDULING,
        host: str | None = None,
        node: str | None = None,
        rp_uuid: str | None = None,
        image_ref: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        group_uuid: str | None = None,
    ) -> models.Server:
        """Create a server record.

        :param flavor: a Flavor, or a snapshot mapping; a snapshot is stored.
        :param uuid: the server's uuid; a new one when omitted.
        :param image_ref: the image it is created from, if any.
        :param attributes: what the owner gave it (``access_ip_v4``,
            ``access_ip_v6``, ``metadata_items``, ``description``).
        :param group_uuid: the server group it joins, in the same transaction.
        :returns: the new server.
        :raises resize_sched.exception.Invalid: a bad value; nothing written.
        :raises resize_sched.exception.Conflict: the uuid is taken.
        :raises resize_sched.exception.ServerGroupNotFound: ``group_uuid`` is
            gone; nothing written.
        """
        try:
            values = {
                "name": text(name, "name"),
                "project_id": text(project_id, "project_id"),
                "user_id": text(user_id, "user_id"),
                "vm_state": text(vm_state, "vm_state", max_length=32),
            }
        except ValueError as exc:
            raise exception.Invalid(reason=str(exc)) from None
        extra = dict(attributes or {})
        check_values(models.Server, extra, what="server")
        values.update(extra)
        if status not in models.SERVER_STATUSES:
            raise exception.Invalid(reason=f"unknown server status {status!r}")
        # NOTE: the uuid is chosen once, outside the retried insert: a run
        # again after a COMMIT whose answer was lost finds its own row.
        columns = dict(
            uuid=uuid or str(uuidlib.uuid4()),
            flavor=_flavor_snapshot(flavor),
            status=status,
            task_state=task_state,
            host=host,
            node=node,
            rp_uuid=rp_uuid,
            needs_heal=False,
            image_ref=image_ref,
            # NOTE: recorded as already running (an adopted server): launched now.
            launched_at=models.utcnow() if vm_state == models.VM_ACTIVE else None,
            created_at=models.utcnow(),
            **values,
        )
        return self._server_insert(columns, group_uuid)

    @retry_on_deadlock
    def _server_insert(self, columns: dict[str, Any], group_uuid: str | None) -> models.Server:
        server = models.Server(**columns)
        try:
            with self._writer() as session:
                session.add(server)
                if group_uuid is not None:
                    group_id = session.scalar(
                        sa.select(models.ServerGroup.id).where(
                            models.ServerGroup.uuid == group_uuid
                        )
                    )
                    if group_id is None:
                        raise exception.ServerGroupNotFound(group_uuid=group_uuid)
                    session.add(
                        models.ServerGroupMember(group_id=group_id, server_uuid=server.uuid)
                    )
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                found = self._server_created_by_earlier_run(columns)
                if found is not None:
                    return found
            raise exception.Conflict(reason=f"server {server.uuid} already exists") from None
        return server

    def _server_created_by_earlier_run(self, columns: Mapping[str, Any]) -> models.Server | None:
        """The server row this create's earlier run committed (its answer
        lost), or None if the row with its uuid is not that one."""
        with self._reader() as session:
            found = session.get(models.Server, columns["uuid"])
        if found is None or any(getattr(found, k) != v for k, v in columns.items()):
            return None
        LOG.info("Server %s was created by an earlier run of this create", found.uuid)
        return found

    def server_get(
        self, uuid: str, project_id: ProjectScope = ALL_PROJECTS, *, read_deleted: bool = False
    ) -> models.Server:
        """Get a server.

        :param project_id: the project the server must belong to, or
            :data:`ALL_PROJECTS` (the default: a service's own lookups).
        :param read_deleted: also find a deleted server.
        :raises resize_sched.exception.ServerNotFound: no such server (in the project).
        :raises resize_sched.exception.ProjectRequired: ``project_id`` is None.
        """
        server = self._first(
            models.Server,
            project_condition(models.Server.project_id, project_id, "server lookup"),
            None if read_deleted else models.Server.deleted_at.is_(None),
            uuid=uuid,
        )
        if server is None:
            raise exception.ServerNotFound(server_id=uuid)
        return server

    def server_list(
        self,
        project_id: ProjectScope = ALL_PROJECTS,
        *,
        host: str | None = None,
        status: str | None = None,
        task_state: str | None = None,
        needs_heal: bool | None = None,
        read_deleted: bool = False,
        reservation_id: str | None = None,
    ) -> list[models.Server]:
        """List servers, oldest first.

        :param project_id: only this project's, or :data:`ALL_PROJECTS` (the
            default: a service's own listings).
        :param host: only those on this host.
        :param status: only those in this status (``BUILD``, ``ACTIVE``...).
        :param task_state: only those with this task (``deleting``...).
        :param needs_heal: only those flagged (True) or not (False).
        :param read_deleted: include deleted servers.
        :param reservation_id: only those of this create (multiple create).
        :raises resize_sched.exception.ProjectRequired: ``project_id`` is None.
        """
        return self._list(
            models.Server,
            project_condition(models.Server.project_id, project_id, "server listing"),
            None if read_deleted else models.Server.deleted_at.is_(None),
            optional={
                "host": host,
                "status": status,
                "task_state": task_state,
                "reservation_id": reservation_id,
                "needs_heal": needs_heal,
            },
            order_by=(models.Server.created_at, models.Server.uuid),
        )

    # -- state changes (compare-and-swaps) -------------------------------------------

    def server_update(
        self,
        uuid: str,
        /,
        *,
        expected: Mapping[str, Any] | None = None,
        operation: str = "update",
        then: Callable[[Session], None] | None = None,
        **values: Any,
    ) -> models.Server:
        """Update a live server, if it is still as ``expected`` (compare-and-swap).

        One ``UPDATE ... WHERE uuid = ? AND <expected>``: of two racing
        callers expecting the same state, exactly one wins. Setting status
        DELETED also sets ``deleted_at`` unless given; setting vm_state
        ``active`` sets ``launched_at`` if it is not set yet.

        :param expected: column -> value the row must have; ``None`` means
            NULL, a list/tuple/set any of its members.
        :param operation: what the caller is doing, for the conflict message.
        :param then: more work in the same transaction, run only when the
            swap changed the row (a compute node's failed builds).
        :param values: columns to set; a Flavor for ``flavor`` is snapshotted.
        :returns: the server as updated.
        :raises resize_sched.exception.ServerNotFound: no such live server.
        :raises resize_sched.exception.ServerStateConflict: it is not as expected.
        :raises resize_sched.exception.Invalid: an unknown column or status.
        """
        expected = dict(expected or {})
        check_values(models.Server, values, what="server")
        check_values(models.Server, expected, what="server", compared=True)
        if "status" in values and values["status"] not in models.SERVER_STATUSES:
            raise exception.Invalid(reason=f"unknown server status {values['status']!r}")
        if "flavor" in values:
            values["flavor"] = _flavor_snapshot(values["flavor"])
        if values.get("status") == models.STATUS_DELETED:
            values.setdefault("deleted_at", models.utcnow())
        if values.get("vm_state") == models.VM_ACTIVE and "launched_at" not in values:
            # NOTE: the first time only: a server keeps its launch time
            # across resizes (os-simple-tenant-usage counts from it).
            values["launched_at"] = sa.func.coalesce(
                models.Server.launched_at, sa.literal(models.utcnow(), models.UTCDateTime())
            )
        return self._server_swap(uuid, expected, operation, values, then)

    def server_touch(
        self, uuid: str, /, *, expected: Mapping[str, Any], operation: str
    ) -> models.Server:
        """Stamp the server's ``updated_at`` now, if it is still as ``expected``.

        For a worker taking a stalled server on: expecting the ``updated_at``
        it saw makes it the only one of several that does.

        :raises resize_sched.exception.ServerStateConflict: it is not as expected.
        """
        check_values(models.Server, expected, what="server", compared=True)
        return self._server_swap(uuid, expected, operation, {"updated_at": models.utcnow()})

    @retry_on_deadlock
    def _server_swap(
        self,
        uuid: str,
        expected: Mapping[str, Any],
        operation: str,
        values: dict[str, Any],
        then: Callable[[Session], None] | None = None,
    ) -> models.Server:
        conditions = [models.Server.deleted_at.is_(None)]
        conditions += [match(getattr(models.Server, k), v) for k, v in expected.items()]
        # NOTE: an offload, whoever begins it (the API, the sweep, a shelve
        # report), waits while a restore of what a failed resize left missing
        # is written for the server (see migration_checks.no_restore_in_flight).
        offload = values.get("task_state") == models.TASK_SHELVING_OFFLOADING
        if offload:
            conditions.append(no_restore_in_flight())
        with self._writer() as session:
            changed, server = update_where(session, models.Server, uuid, conditions, values)
            # NOTE: a swap found done by an earlier run (its commit landed,
            # the answer lost) did its ``then`` in that commit.
            if changed and then is not None and not found_done():
                then(session)
        if server is None or (changed == 0 and server.deleted_at is not None):
            raise exception.ServerNotFound(server_id=uuid)
        if changed == 0:
            actual = describe(server, expected)
            if offload and _holds(server, expected):
                actual = "a restore of what a failed resize left missing being written for it"
            raise exception.ServerStateConflict(
                server_id=uuid,
                actual=actual,
                expected=describe_expected(expected),
                operation=operation,
            )
        return server

    def server_start_resize(self, uuid: str) -> models.Server:
        """Move an idle ACTIVE server to (RESIZE, resize_prep), atomically.

        Of two resizes of one server, exactly one starts; the other gets
        ServerStateConflict naming the state it found. A server flagged
        ``needs_heal`` (what it should hold in Placement is missing) does not
        start: a resize begins from what the server holds.

        :raises resize_sched.exception.ServerNotFound: no such server.
        :raises resize_sched.exception.ServerStateConflict: not (ACTIVE,
            active, no task, nothing to heal).
        """
        return self.server_update(
            uuid,
            expected={
                # NOTE: a stopped server may be resized, as in Nova; it stays
                # powered off and ends SHUTOFF (models.settled_state).
                "status": (models.STATUS_ACTIVE, models.STATUS_SHUTOFF),
                "vm_state": (models.VM_ACTIVE, models.VM_STOPPED),
                "task_state": None,
                "needs_heal": False,
            },
            operation="resize",
            status=models.STATUS_RESIZE,
            task_state=models.TASK_RESIZE_PREP,
        )

    def server_begin_power(
        self, uuid: str, *, stop: bool, project_id: ProjectScope = ALL_PROJECTS
    ) -> models.Server:
        """Record a stop (ACTIVE or ERROR on a host -> ``powering-off``) or a
        start (SHUTOFF -> ``powering-on``), atomically: of two, one wins.

        :raises resize_sched.exception.ServerNotFound: no such server (or
            another project's).
        :raises resize_sched.exception.ServerStateConflict: not idle in the
            state the action needs.
        """
        server = self.server_get(uuid, project_id=project_id)
        if stop:
            # NOTE: as Nova, an ERROR server may be stopped too, if it has a
            # host to stop it on (one whose build failed has none).
            expected = {
                "status": (models.STATUS_ACTIVE, models.STATUS_ERROR),
                "vm_state": (models.VM_ACTIVE, models.VM_ERROR),
            }
            if server.host is None:
                raise exception.ServerStateConflict(
                    server_id=uuid, actual="on no host", operation="stop", expected="on a host"
                )
            task = models.TASK_POWERING_OFF
        else:
            expected = {"status": models.STATUS_SHUTOFF, "vm_state": models.VM_STOPPED}
            task = models.TASK_POWERING_ON
        return self.server_update(
            uuid,
            expected={**expected, "task_state": None},
            operation="stop" if stop else "start",
            task_state=task,
        )

    # -- delete --------------------------------------------------------------------

    @retry_on_deadlock
    def server_begin_delete(
        self, uuid: str, project_id: ProjectScope = ALL_PROJECTS
    ) -> models.Server:
        """Record that the server is to be deleted; it wins over every later step.

        One transaction: the server's task becomes ``deleting`` whatever it
        was, and its resize in flight (if any) ends in ``error`` ("server
        deleted"), owned by no step. Every conductor step checks both in the
        compare-and-swap that ends it, so none can undo the delete. Asking
        again is harmless.

        :param project_id: the project the server must belong to, or
            :data:`ALL_PROJECTS` (the default).
        :returns: the server, ``deleting``.
        :raises resize_sched.exception.ServerNotFound: no such live server.
        :raises resize_sched.exception.ProjectRequired: ``project_id`` is None.
        """
        conditions = [models.Server.deleted_at.is_(None)]
        condition = project_condition(models.Server.project_id, project_id, "server delete")
        if condition is not None:
            conditions.append(condition)
        not_yet = sa.or_(
            models.Server.task_state.is_(None), models.Server.task_state != models.TASK_DELETING
        )
        with self._writer() as session:
            changed, server = update_where(
                session,
                models.Server,
                uuid,
                [*conditions, not_yet],
                {"task_state": models.TASK_DELETING},
            )
            if changed == 0 and (
                server is None
                or server.deleted_at is not None
                or (condition is not None and server.project_id != project_id)
            ):
                raise exception.ServerNotFound(server_id=uuid)
            self.migration_close_for_delete(session, uuid)  # type: ignore[attr-defined]
        return server

    def server_list_delete_unfinished(self) -> list[models.Server]:
        """Live servers whose delete was accepted but not carried out, oldest first.

        A delete is accepted when the API records it: the server becomes
        ``deleting`` and a ``delete`` instance action is recorded. Both are
        looked for, so a delete is finished even if a writer cleared the task
        state since (every writer should compare-and-swap it; this is the
        sweep's safety net, not the rule).
        """
        accepted = sa.exists().where(
            models.InstanceAction.server_uuid == models.Server.uuid,
            models.InstanceAction.action == action_names.DELETE,
        )
        return self._list(
            models.Server,
            models.Server.deleted_at.is_(None),
            sa.or_(models.Server.task_state == models.TASK_DELETING, accepted),
            order_by=(models.Server.created_at, models.Server.uuid),
        )

    def server_delete(self, uuid: str, *, expected: Mapping[str, Any] | None = None) -> None:
        """Soft-delete a server (status DELETED, vm_state deleted); it leaves
        its server group.

        :raises resize_sched.exception.ServerNotFound: no such live server.
        :raises resize_sched.exception.ServerStateConflict: it is not as expected.
        """
        self.server_update(
            uuid,
            expected=expected,
            operation="delete",
            status=models.STATUS_DELETED,
            vm_state=models.VM_DELETED,
            task_state=None,
        )
        # NOTE: a second transaction: a member row left by a crash in between
        # names a deleted server, which no group read counts.
        with self._writer() as session:
            session.execute(
                sa.delete(models.ServerGroupMember).where(
                    models.ServerGroupMember.server_uuid == uuid
                )
            )


def _holds(row: Any, expected: Mapping[str, Any]) -> bool:
    """Whether ``row`` is as ``expected`` (a list: any of its members)."""
    for key, value in expected.items():
        held = getattr(row, key)
        if isinstance(value, list | tuple | set | frozenset):
            if held not in value:
                return False
        elif held != value:
            return False
    return True
