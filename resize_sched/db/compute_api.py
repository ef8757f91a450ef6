"""Data API for flavors, servers and request specs (a mixin of ``Database``)."""

import re
import uuid as uuidlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

import sqlalchemy as sa
from oslo_log import log as logging

from resize_sched import exception, resources
from resize_sched.db import models
from resize_sched.db.session import (
    SessionSource,
    check_values,
    describe,
    describe_expected,
    match,
    retry_on_deadlock,
    text,
    update_where,
    whole_number,
)

LOG = logging.getLogger(__name__)

# As in Nova: letters, digits, '.', '_', '-' and inner spaces.
_FLAVORID_RE = re.compile(r"^(?! )[a-zA-Z0-9. _-]+(?<! )\Z")
_FLAVOR_SIZES = ("vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap")
#: the instance action the API records when it accepts a delete (action_api.DELETE)
_DELETE_ACTION = "delete"
_REQUEST_SPEC_FIELDS = frozenset(
    {"resources", "required_traits", "ignore_hosts", "force_hosts", "scheduler_hints"}
)


class AllProjects:
    """The type of :data:`ALL_PROJECTS`: a server query over every project."""

    def __repr__(self) -> str:
        return "ALL_PROJECTS"


#: The project of a server query that reads every project's servers: a
#: service's own work, or an API caller that asked for all projects and whose
#: policy allows it. A query given ``None`` (a caller without a project) is
#: refused: a missing project never means "no filter".
ALL_PROJECTS: Final = AllProjects()

#: What a server query is limited to: one project, or :data:`ALL_PROJECTS`.
ProjectScope = str | AllProjects


def project_condition(column: Any, project_id: ProjectScope | None, what: str) -> Any:
    """The ``WHERE`` clause limiting a query to a project, or None for every project.

    :param column: the project column of the queried model.
    :param project_id: the project, or :data:`ALL_PROJECTS`.
    :param what: the query, for the error.
    :returns: the clause, or None for :data:`ALL_PROJECTS`.
    :raises ProjectRequired: no project (None or empty) and not ALL_PROJECTS.
    """
    if project_id is ALL_PROJECTS:
        return None
    if not isinstance(project_id, str) or not project_id:
        LOG.error("Refused %s with no project (%r): never read as every project", what, project_id)
        raise exception.ProjectRequired(what=what)
    return column == project_id


def _flavor_snapshot(flavor: models.Flavor | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(flavor, models.Flavor):
        return flavor.to_snapshot()
    snapshot = dict(flavor)
    try:
        resources.flavor_request(snapshot)
    except (KeyError, TypeError, ValueError) as exc:
        raise exception.InvalidFlavor(reason=f"bad flavor snapshot: {exc}") from None
    return snapshot


def _string_list(value: Iterable[str], name: str) -> list[str]:
    if isinstance(value, str):
        raise exception.Invalid(reason=f"{name} must be a list of strings, not a string")
    items = list(value)
    if not all(isinstance(item, str) for item in items):
        raise exception.Invalid(reason=f"{name} must be a list of strings, got {items!r}")
    return items


def _checked_specs(sizes: Mapping[str, Any], specs: dict[str, Any]) -> dict[str, str]:
    """Flavor extra specs, each a string, that make a valid resource request.

    :raises ValueError: a bad key or value, or a ``resources:``/``trait:``
        spec the scheduler could not use.
    """
    for key, value in specs.items():
        text(key, "extra spec key")
        if not isinstance(value, str) or len(value) > 255:
            raise ValueError(f"extra spec {key} must be a string of at most 255")
    resources.flavor_request({**sizes, "extra_specs": specs})
    return specs


def _check_request_spec(values: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(values) - _REQUEST_SPEC_FIELDS)
    if unknown:
        raise exception.Invalid(
            reason=f"request specs hold only {', '.join(sorted(_REQUEST_SPEC_FIELDS))}; "
            f"not {', '.join(unknown)} (per-attempt state such as retries and "
            "alternates is never stored there)"
        )
    if "resources" in values:
        try:
            values["resources"] = resources.normalize(values["resources"])
        except (AttributeError, TypeError, ValueError) as exc:
            raise exception.Invalid(reason=f"bad resources: {exc}") from None
    for key in ("required_traits", "ignore_hosts", "force_hosts"):
        if key in values:
            values[key] = _string_list(values[key], key)
    if "scheduler_hints" in values:
        hints = values["scheduler_hints"]
        if hints is None:
            hints = {}
        if not isinstance(hints, Mapping):
            raise exception.Invalid(reason=f"scheduler_hints must be a mapping, got {hints!r}")
        values["scheduler_hints"] = dict(hints)
    return values


class ComputeApi(SessionSource):
    """Flavors, servers and request specs."""

    # -- flavors ---------------------------------------------------------------

    @retry_on_deadlock
    def flavor_create(
        self,
        name: str,
        vcpus: int,
        memory_mb: int,
        root_gb: int,
        ephemeral_gb: int = 0,
        swap: int = 0,
        extra_specs: dict[str, str] | None = None,
        flavorid: str | None = None,
        is_public: bool = True,
    ) -> models.Flavor:
        """Create a flavor.

        :param name: unique among live flavors.
        :param vcpus: at least 1.
        :param memory_mb: at least 1.
        :param root_gb: 0 or more (0: the root disk is not local).
        :param ephemeral_gb: 0 or more.
        :param swap: swap in MB, 0 or more.
        :param extra_specs: ``resources:CLASS=N``, ``trait:NAME=required``...
        :param flavorid: the API-visible id; a new UUID when omitted.
        :param is_public: visible to every project.
        :returns: the new flavor.
        :raises resize_sched.exception.InvalidFlavor: a bad value; nothing written.
        :raises resize_sched.exception.FlavorExists: the name or flavorid is taken.
        """
        try:
            name = text(name, "name")
            sizes = {
                "vcpus": whole_number(vcpus, "vcpus", minimum=1),
                "memory_mb": whole_number(memory_mb, "memory_mb", minimum=1),
                "root_gb": whole_number(root_gb, "root_gb", minimum=0),
                "ephemeral_gb": whole_number(ephemeral_gb, "ephemeral_gb", minimum=0),
                "swap": whole_number(swap, "swap", minimum=0),
            }
            if flavorid is None:
                flavorid = str(uuidlib.uuid4())
            elif not isinstance(flavorid, str) or not _FLAVORID_RE.match(flavorid):
                raise ValueError(
                    f"flavorid {flavorid!r} may only hold letters, digits, '.', '_', "
                    "'-' and inner spaces"
                )
            flavorid = text(flavorid, "flavorid")
            specs = _checked_specs(sizes, dict(extra_specs or {}))
            if not isinstance(is_public, bool):
                raise ValueError(f"is_public must be true or false, got {is_public!r}")
        except ValueError as exc:
            raise exception.InvalidFlavor(reason=str(exc)) from None

        flavor = models.Flavor(
            flavorid=flavorid,
            name=name,
            extra_specs=specs,
            is_public=is_public,
            deleted=0,
            **sizes,
        )
        try:
            with self._writer() as session:
                clash = session.scalars(
                    sa.select(models.Flavor).where(
                        models.Flavor.deleted == 0,
                        sa.or_(models.Flavor.name == name, models.Flavor.flavorid == flavorid),
                    )
                ).first()
                if clash is not None:
                    raise self._flavor_exists(clash, name, flavorid)
                session.add(flavor)
        except sa.exc.IntegrityError:
            # NOTE: someone created it between our check and our insert.
            raise exception.FlavorExists(name=name) from None
        LOG.info("Created flavor %s (%s)", flavorid, name)
        return flavor

    @staticmethod
    def _flavor_exists(clash: models.Flavor, name: str, flavorid: str) -> exception.FlavorExists:
        if clash.name == name:
            return exception.FlavorExists(name=name)
        return exception.FlavorExists(
            f"A flavor with id {flavorid} already exists.", name=name, flavorid=flavorid
        )

    def flavor_get(self, flavorid: str, *, read_deleted: bool = False) -> models.Flavor:
        """Get a live flavor by its API-visible id.

        :param flavorid: the flavor's id.
        :param read_deleted: also find a deleted one (the latest).
        :returns: the flavor.
        :raises resize_sched.exception.FlavorNotFound: no such flavor.
        """
        query = sa.select(models.Flavor).where(models.Flavor.flavorid == flavorid)
        if not read_deleted:
            query = query.where(models.Flavor.deleted == 0)
        with self._reader() as session:
            flavor = session.scalars(query.order_by(models.Flavor.id.desc())).first()
        if flavor is None:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        return flavor

    def flavor_get_by_name(self, name: str) -> models.Flavor:
        """Get a live flavor by name.

        :raises resize_sched.exception.FlavorNotFound: no such flavor.
        """
        with self._reader() as session:
            flavor = session.scalars(
                sa.select(models.Flavor).where(
                    models.Flavor.name == name, models.Flavor.deleted == 0
                )
            ).first()
        if flavor is None:
            raise exception.FlavorNotFound(flavor_id=name)
        return flavor

    def flavor_list(self, *, is_public: bool | None = None) -> list[models.Flavor]:
        """List live flavors, smallest first (by memory, then vCPUs, then id).

        :param is_public: only public (True) or private (False) flavors.
        """
        query = sa.select(models.Flavor).where(models.Flavor.deleted == 0)
        if is_public is not None:
            query = query.where(models.Flavor.is_public == is_public)
        query = query.order_by(models.Flavor.memory_mb, models.Flavor.vcpus, models.Flavor.id)
        with self._reader() as session:
            return list(session.scalars(query))

    @retry_on_deadlock
    def flavor_update_extra_specs(
        self,
        flavorid: str,
        *,
        updates: Mapping[str, str] | None = None,
        remove: str | None = None,
    ) -> models.Flavor:
        """Set some extra specs of a live flavor, or remove one.

        Servers keep the snapshot they were built or resized with; new builds
        and resizes see the change.

        :param updates: keys to set (added or replaced).
        :param remove: a key to remove.
        :returns: the flavor as updated.
        :raises resize_sched.exception.FlavorNotFound: no such live flavor.
        :raises resize_sched.exception.FlavorExtraSpecNotFound: ``remove`` is not set.
        :raises resize_sched.exception.InvalidFlavor: the specs would not be
            valid; nothing written.
        """
        with self._writer() as session:
            flavor = session.scalars(
                sa.select(models.Flavor)
                .where(models.Flavor.flavorid == flavorid, models.Flavor.deleted == 0)
                .with_for_update()
            ).first()
            if flavor is None:
                raise exception.FlavorNotFound(flavor_id=flavorid)
            specs = {**(flavor.extra_specs or {}), **(updates or {})}
            if remove is not None:
                if remove not in specs:
                    raise exception.FlavorExtraSpecNotFound(flavor_id=flavorid, key=remove)
                del specs[remove]
            sizes = {k: getattr(flavor, k) for k in _FLAVOR_SIZES}
            try:
                flavor.extra_specs = _checked_specs(sizes, specs)
            except ValueError as exc:
                raise exception.InvalidFlavor(reason=str(exc)) from None
        LOG.info("Flavor %s extra specs now %s", flavorid, specs)
        return flavor

    @retry_on_deadlock
    def flavor_delete(self, flavorid: str) -> None:
        """Soft-delete a flavor; servers keep their snapshot of it.

        :raises resize_sched.exception.FlavorNotFound: no such live flavor.
        """
        with self._writer() as session:
            result = session.execute(
                sa.update(models.Flavor)
                .where(models.Flavor.flavorid == flavorid, models.Flavor.deleted == 0)
                .values(deleted=models.Flavor.id, deleted_at=models.utcnow())
                .execution_options(synchronize_session=False)
            )
        if result.rowcount == 0:
            raise exception.FlavorNotFound(flavor_id=flavorid)
        LOG.info("Deleted flavor %s", flavorid)

    # -- servers -----------------------------------------------------------------

    @retry_on_deadlock
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
    ) -> models.Server:
        """Create a server record.

        :param flavor: a Flavor, or a snapshot mapping; a snapshot is stored.
        :param uuid: the server's uuid; a new one when omitted.
        :param image_ref: the image it is created from, if any.
        :returns: the new server.
        :raises resize_sched.exception.Invalid: a bad value; nothing written.
        :raises resize_sched.exception.Conflict: the uuid is taken.
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
        if status not in models.SERVER_STATUSES:
            raise exception.Invalid(reason=f"unknown server status {status!r}")
        server = models.Server(
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
            **values,
        )
        try:
            with self._writer() as session:
                session.add(server)
        except sa.exc.IntegrityError:
            raise exception.Conflict(reason=f"server {server.uuid} already exists") from None
        return server

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
        query = sa.select(models.Server).where(models.Server.uuid == uuid)
        condition = project_condition(models.Server.project_id, project_id, "server lookup")
        if condition is not None:
            query = query.where(condition)
        if not read_deleted:
            query = query.where(models.Server.deleted_at.is_(None))
        with self._reader() as session:
            server = session.scalars(query).first()
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
    ) -> list[models.Server]:
        """List servers, oldest first.

        :param project_id: only this project's, or :data:`ALL_PROJECTS` (the
            default: a service's own listings).
        :param host: only those on this host.
        :param status: only those in this status (``BUILD``, ``ACTIVE``...).
        :param task_state: only those with this task (``deleting``...).
        :param needs_heal: only those flagged (True) or not (False).
        :param read_deleted: include deleted servers.
        :raises resize_sched.exception.ProjectRequired: ``project_id`` is None.
        """
        query = sa.select(models.Server)
        condition = project_condition(models.Server.project_id, project_id, "server listing")
        if condition is not None:
            query = query.where(condition)
        if host is not None:
            query = query.where(models.Server.host == host)
        if status is not None:
            query = query.where(models.Server.status == status)
        if task_state is not None:
            query = query.where(models.Server.task_state == task_state)
        if needs_heal is not None:
            query = query.where(models.Server.needs_heal == needs_heal)
        if not read_deleted:
            query = query.where(models.Server.deleted_at.is_(None))
        query = query.order_by(models.Server.created_at, models.Server.uuid)
        with self._reader() as session:
            return list(session.scalars(query))

    def server_update(
        self,
        uuid: str,
        /,
        *,
        expected: Mapping[str, Any] | None = None,
        operation: str = "update",
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
        return self._server_swap(uuid, expected, operation, values)

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
        self, uuid: str, expected: Mapping[str, Any], operation: str, values: dict[str, Any]
    ) -> models.Server:
        conditions = [models.Server.deleted_at.is_(None)]
        conditions += [match(getattr(models.Server, k), v) for k, v in expected.items()]
        with self._writer() as session:
            changed, server = update_where(session, models.Server, uuid, conditions, values)
        if server is None or (changed == 0 and server.deleted_at is not None):
            raise exception.ServerNotFound(server_id=uuid)
        if changed == 0:
            raise exception.ServerStateConflict(
                server_id=uuid,
                actual=describe(server, expected),
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
                "status": models.STATUS_ACTIVE,
                "vm_state": models.VM_ACTIVE,
                "task_state": None,
                "needs_heal": False,
            },
            operation="resize",
            status=models.STATUS_RESIZE,
            task_state=models.TASK_RESIZE_PREP,
        )

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
            models.InstanceAction.action == _DELETE_ACTION,
        )
        query = (
            sa.select(models.Server)
            .where(
                models.Server.deleted_at.is_(None),
                sa.or_(models.Server.task_state == models.TASK_DELETING, accepted),
            )
            .order_by(models.Server.created_at, models.Server.uuid)
        )
        with self._reader() as session:
            return list(session.scalars(query))

    def server_delete(self, uuid: str, *, expected: Mapping[str, Any] | None = None) -> None:
        """Soft-delete a server (status DELETED, vm_state deleted).

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

    # -- request specs -------------------------------------------------------------

    @retry_on_deadlock
    def request_spec_create(
        self,
        server_uuid: str,
        *,
        resources: dict[str, int],
        required_traits: Iterable[str],
        ignore_hosts: Iterable[str] = (),
        force_hosts: Iterable[str] = (),
        scheduler_hints: Mapping[str, Any] | None = None,
    ) -> models.RequestSpec:
        """Record what a server asks the scheduler for.

        :raises resize_sched.exception.ServerNotFound: no such server.
        :raises resize_sched.exception.Invalid: a bad value.
        :raises resize_sched.exception.Conflict: the server already has one.
        """
        values = _check_request_spec(
            {
                "resources": resources,
                "required_traits": required_traits,
                "ignore_hosts": ignore_hosts,
                "force_hosts": force_hosts,
                "scheduler_hints": scheduler_hints,
            }
        )
        spec = models.RequestSpec(server_uuid=server_uuid, **values)
        try:
            with self._writer() as session:
                if session.get(models.Server, server_uuid) is None:
                    raise exception.ServerNotFound(server_id=server_uuid)
                session.add(spec)
        except sa.exc.IntegrityError:
            raise exception.Conflict(
                reason=f"server {server_uuid} already has a request spec"
            ) from None
        return spec

    def request_spec_get(self, server_uuid: str) -> models.RequestSpec:
        """Get a server's request spec.

        :raises resize_sched.exception.RequestSpecNotFound: none recorded.
        """
        with self._reader() as session:
            spec = session.scalars(
                sa.select(models.RequestSpec).where(models.RequestSpec.server_uuid == server_uuid)
            ).first()
        if spec is None:
            raise exception.RequestSpecNotFound(server_id=server_uuid)
        return spec

    @retry_on_deadlock
    def request_spec_update(self, server_uuid: str, **values: Any) -> models.RequestSpec:
        """Change what a server asks for (e.g. the new flavor's resources).

        :raises resize_sched.exception.RequestSpecNotFound: none recorded.
        :raises resize_sched.exception.Invalid: an unknown field (per-attempt
            state such as retries or alternates) or a bad value.
        """
        values = _check_request_spec(dict(values))
        with self._writer() as session:
            result = session.execute(
                sa.update(models.RequestSpec)
                .where(models.RequestSpec.server_uuid == server_uuid)
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            if result.rowcount == 0:
                raise exception.RequestSpecNotFound(server_id=server_uuid)
            return session.scalars(
                sa.select(models.RequestSpec)
                .where(models.RequestSpec.server_uuid == server_uuid)
                .execution_options(populate_existing=True)
            ).one()
