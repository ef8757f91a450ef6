"""The first, database-only step of each server action: validate and record intent.

The API service runs these and then casts to the conductor, which does the
Placement work; tests that drive the task flows directly run them too. Each
step is a compare-and-swap on the server (and migration), so two concurrent
requests can never both start: the second gets a typed conflict error.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.context import RequestContext
from resize_sched.db import action_api
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.strategies import ClaimStrategy, Holdings

LOG = logging.getLogger(__name__)


def _record(db: Any, context: RequestContext | None, server_uuid: str, action: str) -> None:
    """Record the accepted action for ``os-instance-actions`` (when a request made it)."""
    if context is None:
        return
    db.action_start(
        server_uuid,
        context.request_id,
        action,
        user_id=context.user_id,
        project_id=context.project_id,
    )


def create_server(
    db: Any,
    *,
    name: str,
    flavorid: str,
    project_id: str,
    user_id: str,
    force_hosts: Sequence[str] = (),
    image_ref: str | None = None,
    context: RequestContext | None = None,
    attributes: dict[str, Any] | None = None,
    scheduler_hints: Mapping[str, Any] | None = None,
) -> Any:
    """Record a server in BUILD with its request spec; no Placement call.

    The flavor is read before anything is written, so an unknown flavor
    leaves the database unchanged.

    :param db: the :class:`resize_sched.db.api.Database`.
    :param name: the server's name.
    :param flavorid: the API-visible id of its flavor.
    :param project_id: the project that owns it.
    :param user_id: the user who asked for it.
    :param force_hosts: hosts the scheduler must choose among (tests, admins).
    :param image_ref: the image it is created from, if any.
    :param context: the request; when given, its ``create`` action is recorded.
    :param attributes: what the owner gave the server besides (access
        addresses, metadata), by column.
    :param scheduler_hints: ``os:scheduler_hints`` as given (validated),
        kept in the request spec for every later scheduling of the server.
    :returns: the server row.
    :raises FlavorNotFound: unknown flavor.
    :raises Invalid: a bad name, project or user.
    """
    flavor = db.flavor_get(flavorid)
    # NOTE: checked before anything is written: a flavor stored before
    # today's hw:numa_nodes checks may be refused by them.
    request = _checked_request(flavor.to_snapshot(), f"flavor {flavorid}")
    server = db.server_create(
        name=name,
        project_id=project_id,
        user_id=user_id,
        flavor=flavor,
        image_ref=image_ref,
        attributes=attributes,
    )
    db.request_spec_create(
        server.uuid,
        resources=request.resources,
        required_traits=sorted(request.required_traits),
        force_hosts=list(force_hosts),
        scheduler_hints=dict(scheduler_hints or {}),
    )
    _record(db, context, server.uuid, action_api.CREATE)
    LOG.info("Server %s (%s) recorded with flavor %s", server.uuid, name, flavorid)
    return server


def begin_power(
    db: Any,
    server_uuid: str,
    *,
    stop: bool,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a stop (ACTIVE -> powering-off) or a start (SHUTOFF -> powering-on).

    :param stop: stop (True) or start (False).
    :param context: the request; when given, its ``stop``/``start`` action is recorded.
    :returns: the server.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle in ACTIVE (stop) or SHUTOFF (start).
    """
    server = db.server_begin_power(server_uuid, stop=stop, project_id=project_id)
    _record(db, context, server_uuid, action_api.STOP if stop else action_api.START)
    return server


def begin_resize(
    db: Any,
    strategy: ClaimStrategy,
    server_uuid: str,
    flavorid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a resize: server ACTIVE -> RESIZE, a new ``pre-migrating`` migration.

    The migration records the old and new flavors and ``strategy``'s name:
    every later phase of this resize uses that strategy, whatever the
    configuration says by then.

    :param db: the :class:`resize_sched.db.api.Database`.
    :param strategy: the strategy configured now.
    :param project_id: restrict to this project's servers (:data:`ALL_PROJECTS`:
        an administrator or a service).
    :param context: the request; when given, its ``resize`` action is recorded.
    :returns: the migration row.
    :raises FlavorNotFound: unknown flavor.
    :raises Invalid: the new flavor is the server's current one.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not ACTIVE with no task, or
        is flagged ``needs_heal``.
    """
    flavor = db.flavor_get(flavorid)
    server = db.server_get(server_uuid, project_id=project_id)
    if str(server.flavor.get("id")) == str(flavor.flavorid):
        raise exception.Invalid(
            reason=f"server {server_uuid} already has flavor {flavor.flavorid}"
        )
    if server.status not in ("ACTIVE", "SHUTOFF") or server.rp_uuid is None:
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=server.status,
            operation="resize",
            expected="ACTIVE or SHUTOFF",
        )
    if server.needs_heal:
        # NOTE: a resize starts from what the server holds in Placement; a
        # failed restore left that missing, and heal puts it back.
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual="ACTIVE with allocations to heal (resize-sched-manage placement heal)",
            operation="resize",
            expected="ACTIVE with its allocations",
        )
    old_flavor = dict(server.flavor)
    new_flavor = flavor.to_snapshot()
    # NOTE: the new flavor is checked before anything is written or claimed.
    # The server's own snapshot is read as it was claimed (a NUMA spec this
    # version refuses left out): resizing away from it is how an operator
    # corrects such a server, and a revert gives the snapshot back as stored.
    try:
        old = rs.stored_request(old_flavor).resources
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"server {server_uuid}'s own flavor cannot be read: {exc}"
        ) from None
    new = _checked_request(new_flavor, f"flavor {flavor.flavorid}").resources
    server = db.server_start_resize(server_uuid)
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host=server.host,
        source_node=server.node,
        source_rp_uuid=server.rp_uuid,
        old_flavor=old_flavor,
        new_flavor=new_flavor,
        old_resources=old,
        new_resources=new,
        claim_strategy=strategy.name,
        project_id=server.project_id,
        user_id=server.user_id,
    )
    # NOTE: what the server holds now, with its consumer generation: the
    # executor's first write needs no read.
    # NOTE: on a host that is a tree of providers (a vGPU child, a sharing
    # provider's disk) the server's flavor is spread over several providers,
    # as recorded on the server; on a flat host it is all on the root.
    original = rs.normalize_allocations(server.allocations or rs.on(server.rp_uuid, old))
    holdings = {
        **Holdings(server=original).to_dict(),
        "generations": {"server": server.placement_generation, "migration": None},
    }
    # NOTE: which provider holds which request group, when recorded: the
    # resize grows each group where it is, a revert gives the map back.
    groups = {"old_group_providers": server.group_providers} if server.group_providers else {}
    migration = db.migration_update(
        migration.uuid,
        holdings=holdings,
        old_allocations=original if server.allocations else None,
        **groups,
    )
    _record(db, context, server_uuid, action_api.RESIZE)
    LOG.info(
        "Resize of server %s to flavor %s begins as migration %s (strategy %s)",
        server_uuid,
        flavor.flavorid,
        migration.uuid,
        strategy.name,
    )
    return migration


def _begin_decision(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope,
    operation: str,
    values: dict[str, Any],
    context: RequestContext | None = None,
) -> Any:
    server = db.server_get(server_uuid, project_id=project_id)
    migration = db.migration_get_in_progress_for_server(server_uuid)
    if server.status != "VERIFY_RESIZE" or migration is None or migration.status != "finished":
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=server.status,
            operation=operation,
            expected="VERIFY_RESIZE",
        )
    db.server_update(
        server_uuid,
        expected={"status": "VERIFY_RESIZE", "task_state": None},
        operation=operation,
        **values,
    )
    status = "confirming" if operation == "confirm" else "reverting"
    migration = db.migration_update(migration.uuid, expected_status="finished", status=status)
    action = action_api.CONFIRM_RESIZE if operation == "confirm" else action_api.REVERT_RESIZE
    _record(db, context, server_uuid, action)
    return migration


def begin_confirm(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a confirm: migration ``finished`` -> ``confirming``.

    :param context: the request; when given, its ``confirmResize`` action is recorded.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not in VERIFY_RESIZE.
    """
    return _begin_decision(
        db, server_uuid, project_id, "confirm", {"task_state": "resize_confirming"}, context
    )


def begin_revert(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a revert: server REVERT_RESIZE, migration ``finished`` -> ``reverting``.

    :param context: the request; when given, its ``revertResize`` action is recorded.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not in VERIFY_RESIZE.
    """
    return _begin_decision(
        db,
        server_uuid,
        project_id,
        "revert",
        {"status": "REVERT_RESIZE", "task_state": "resize_reverting"},
        context,
    )


def begin_delete(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a delete: it wins over every step that comes after it.

    The server becomes ``deleting`` and its resize in flight (if any) ends in
    ``error`` in one transaction; the conductor then releases what both
    consumers hold. See :meth:`resize_sched.db.server_api.ServerApi.server_begin_delete`.

    :param context: the request; when given, its ``delete`` action is recorded.
    :raises ServerNotFound: unknown server, or another project's.
    """
    server = db.server_begin_delete(server_uuid, project_id)
    # NOTE: a server is deleted once: asking again (a retry) records nothing new.
    if not any(a.action == action_api.DELETE for a in db.action_list(server_uuid)):
        _record(db, context, server_uuid, action_api.DELETE)
    LOG.info("Server %s: delete recorded", server_uuid)
    return server


def _checked_request(snapshot: Any, what: str) -> rs.ResourceRequest:
    """:func:`rs.flavor_request` of ``snapshot``, a refusal as InvalidFlavor
    that says what to do."""
    try:
        return rs.flavor_request(snapshot)
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"{what} has extra specs this version refuses: {exc}. Correct the "
            "flavor's extra specs (resize-sched-status upgrade check lists them)"
        ) from None
