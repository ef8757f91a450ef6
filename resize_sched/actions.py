"""The first, database-only step of each server action: validate and record intent.

The API service runs these and then casts to the conductor, which does the
Placement work; tests that drive the task flows directly run them too. Each
step is a compare-and-swap on the server (and migration), so two concurrent
requests can never both start: the second gets a typed conflict error.
"""

from collections.abc import Sequence
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception, quota
from resize_sched import resources as rs
from resize_sched.context import RequestContext
from resize_sched.db import action_api, host_api, models
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
    availability_zone: str | None = None,
    quota_conf: cfg.ConfigOpts | None = None,
    scheduler_hints: dict[str, Any] | None = None,
    group_uuid: str | None = None,
    uuid: str | None = None,
) -> Any:
    """Record a server in BUILD with its request spec; no Placement call.

    The flavor is read before anything is written, so an unknown flavor
    leaves the database unchanged. With ``quota_conf``, the project's (and
    user's) ``instances``, ``cores`` and ``ram`` are checked before the
    server is written and again right after (Nova's recheck): when two
    creates race for the last unit, the recheck refuses whichever sees the
    limit passed and removes its row before anything refers to it.

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
    :param availability_zone: the zone it must be placed in (None: any); the
        server shows it until it has a host.
    :param scheduler_hints: the hints given at create, kept in the request spec.
    :param group_uuid: the server group it joins (with the server row).
    :param uuid: its id (None: a new one).
    :returns: the server row.
    :raises FlavorNotFound: unknown flavor.
    :raises Invalid: a bad name, project or user.
    :raises OverQuota: the server would take the project or user past a limit.
    """
    flavor = db.flavor_get(flavorid)
    # NOTE: checked before anything is written: a flavor stored before
    # today's hw:numa_nodes checks may be refused by them.
    request = _checked_request(flavor.to_snapshot(), f"flavor {flavorid}")
    deltas = quota.flavor_deltas(flavor)
    if quota_conf is not None:
        quota.check_server(db, quota_conf, project_id, user_id, deltas)
    server = db.server_create(
        name=name,
        project_id=project_id,
        user_id=user_id,
        flavor=flavor,
        image_ref=image_ref,
        attributes=(
            {**(attributes or {}), "availability_zone": availability_zone}
            if availability_zone is not None
            else attributes
        ),
        group_uuid=group_uuid,
        uuid=uuid,
    )
    if quota_conf is not None:
        try:
            quota.check_server(db, quota_conf, project_id, user_id, deltas, already_added=True)
        except exception.OverQuota:
            db.server_discard(server.uuid)
            LOG.info("Server %s refused by the quota recheck: a racing create won", server.uuid)
            raise
        except exception.LimitsUnavailable:
            # NOTE: the recheck could not be made (Keystone did not answer):
            # the row must not stay behind without a build.
            db.server_discard(server.uuid)
            raise
    db.request_spec_create(
        server.uuid,
        resources=request.resources,
        required_traits=sorted(request.required_traits),
        force_hosts=list(force_hosts),
        availability_zone=availability_zone,
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


#: The states a server may be shelved from (Nova's also names PAUSED and
#: SUSPENDED, which no server here can be in).
SHELVABLE = (models.STATUS_ACTIVE, models.STATUS_SHUTOFF)
UNSHELVABLE = (models.STATUS_SHELVED, models.STATUS_SHELVED_OFFLOADED)

#: ``availability_zone`` not given to :func:`begin_unshelve` (None is a value).
KEEP_ZONE: Any = object()


def begin_shelve(
    db: Any,
    server_uuid: str,
    *,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a shelve: ACTIVE or SHUTOFF with no task -> task ``shelving``.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle in a state that may be shelved.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if server.host is None:
        raise exception.ServerStateConflict(
            server_id=server_uuid, actual="on no host", operation="shelve", expected="on a host"
        )
    server = db.server_update(
        server_uuid,
        expected={"status": SHELVABLE, "task_state": None},
        operation="shelve",
        task_state=models.TASK_SHELVING,
    )
    _record(db, context, server_uuid, action_api.SHELVE)
    LOG.info("Server %s: shelve recorded", server_uuid)
    return server


def begin_shelve_offload(
    db: Any,
    server_uuid: str,
    *,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record an offload: SHELVED with no task -> task ``shelving_offloading``.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle and SHELVED.
    """
    db.server_get(server_uuid, project_id=project_id)
    server = db.server_update(
        server_uuid,
        expected={"status": models.STATUS_SHELVED, "task_state": None},
        operation="shelveOffload",
        task_state=models.TASK_SHELVING_OFFLOADING,
    )
    _record(db, context, server_uuid, action_api.SHELVE_OFFLOAD)
    LOG.info("Server %s: shelve offload recorded", server_uuid)
    return server


def check_unshelvable(server: Any, availability_zone: Any = KEEP_ZONE) -> None:
    """Refuse an unshelve of a server that is not idle and shelved, or one
    to an availability zone of a server that is not offloaded (409, as Nova).

    :raises ServerStateConflict: either.
    """
    if server.status not in UNSHELVABLE or server.task_state is not None:
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=f"{server.status}" + (f"/{server.task_state}" if server.task_state else ""),
            operation="unshelve",
            expected="SHELVED or SHELVED_OFFLOADED with no task",
        )
    if availability_zone is not KEEP_ZONE and server.status != models.STATUS_SHELVED_OFFLOADED:
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=server.status,
            operation="unshelve to an availability zone",
            expected=models.STATUS_SHELVED_OFFLOADED,
        )


def begin_unshelve(
    db: Any,
    server_uuid: str,
    *,
    availability_zone: Any = KEEP_ZONE,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record an unshelve: SHELVED or SHELVED_OFFLOADED with no task -> task
    ``unshelving``.

    :param availability_zone: (microversion 2.77) the zone an offloaded
        server is to be placed in from now on, checked by the caller;
        recorded on the server and its request spec (:data:`KEEP_ZONE`: as it is).
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle and shelved, or a zone given for a
        server that is not offloaded (as Nova, 409).
    """
    server = db.server_get(server_uuid, project_id=project_id)
    check_unshelvable(server, availability_zone)
    values: dict[str, Any] = {"task_state": models.TASK_UNSHELVING}
    expected: dict[str, Any] = {"status": UNSHELVABLE, "task_state": None}
    if availability_zone is not KEEP_ZONE:
        expected["status"] = models.STATUS_SHELVED_OFFLOADED
        values["availability_zone"] = availability_zone
    server = db.server_update(server_uuid, expected=expected, operation="unshelve", **values)
    if availability_zone is not KEEP_ZONE:
        db.request_spec_update(server_uuid, availability_zone=availability_zone)
    _record(db, context, server_uuid, action_api.UNSHELVE)
    LOG.info("Server %s: unshelve recorded (%s)", server_uuid, server.status)
    return server


def begin_resize(
    db: Any,
    strategy: ClaimStrategy,
    server_uuid: str,
    flavorid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
    quota_conf: cfg.ConfigOpts | None = None,
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
    :param quota_conf: check quota (``cores``, ``ram``: what the new flavor
        adds over the old one) before anything is written, as Nova.
    :returns: the migration row.
    :raises OverQuota: the new flavor's increase passes a limit; no
        migration is recorded.
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
    check_movable(server, "resize")
    old_flavor = dict(server.flavor)
    new_flavor = flavor.to_snapshot()
    # NOTE: the new flavor is checked before anything is written or claimed.
    # The server's own snapshot is read as it was claimed (a NUMA spec this
    # version refuses left out): resizing away from it is how an operator
    # corrects such a server, and a revert gives the snapshot back as stored.
    old = _own_resources(server)
    new = _checked_request(new_flavor, f"flavor {flavor.flavorid}").resources
    if quota_conf is not None:
        check_upsize(db, quota_conf, server, old_flavor, new_flavor)
    migration = _begin_move(
        db,
        strategy,
        server,
        old_flavor=old_flavor,
        new_flavor=new_flavor,
        old_resources=old,
        new_resources=new,
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


def begin_migrate(
    db: Any,
    strategy: ClaimStrategy,
    server_uuid: str,
    host: str | None = None,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a cold migration: a resize to the server's own flavor, on another host.

    Server ACTIVE (or SHUTOFF) -> RESIZE, a new ``pre-migrating`` migration
    of type ``migration`` recording ``strategy``'s name, as a resize does;
    the same steps then move it (schedule, claim, finish, confirm or revert).
    The caller checks ``host`` (known, enabled, not the server's own) first.

    :param host: the only host it may go to (``migrate`` with ``host``);
        None: any the scheduler finds, never its own.
    :param context: the request; when given, its ``migrate`` action is recorded.
    :returns: the migration row.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not ACTIVE or SHUTOFF with no
        task, or is flagged ``needs_heal``.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    check_movable(server, "migrate")
    resources = _own_resources(server)
    migration = _begin_move(
        db,
        strategy,
        server,
        old_flavor=dict(server.flavor),
        new_flavor=dict(server.flavor),
        old_resources=resources,
        new_resources=resources,
        migration_type=models.MIGRATION_TYPE_MIGRATION,
        requested_host=host,
    )
    _record(db, context, server_uuid, action_api.MIGRATE)
    LOG.info(
        "Cold migration of server %s%s begins as migration %s (strategy %s)",
        server_uuid,
        f" to host {host}" if host else "",
        migration.uuid,
        strategy.name,
    )
    return migration


def check_movable(server: Any, operation: str) -> None:
    """Refuse a move of a server that is not idle on a host, or whose
    allocations are to heal (ServerStateConflict)."""
    if server.status not in ("ACTIVE", "SHUTOFF") or server.rp_uuid is None:
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=server.status,
            operation=operation,
            expected="ACTIVE or SHUTOFF",
        )
    if server.needs_heal:
        # NOTE: a move starts from what the server holds in Placement; a
        # failed restore left that missing, and heal puts it back.
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual="ACTIVE with allocations to heal (resize-sched-manage placement heal)",
            operation=operation,
            expected="ACTIVE with its allocations",
        )


def _own_resources(server: Any) -> dict[str, int]:
    """What the server's own flavor snapshot holds, read as it was claimed."""
    try:
        return rs.stored_request(dict(server.flavor)).resources
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"server {server.uuid}'s own flavor cannot be read: {exc}"
        ) from None


def _begin_move(
    db: Any,
    strategy: ClaimStrategy,
    server: Any,
    *,
    migration_type: str = models.MIGRATION_TYPE_RESIZE,
    requested_host: str | None = None,
    **flavors: Any,
) -> Any:
    """The server to (RESIZE, resize_prep) by compare-and-swap, and its
    migration recorded with what the server holds now."""
    server_uuid = server.uuid
    server = db.server_start_resize(server_uuid)
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host=server.host,
        source_node=server.node,
        source_rp_uuid=server.rp_uuid,
        claim_strategy=strategy.name,
        project_id=server.project_id,
        user_id=server.user_id,
        migration_type=migration_type,
        requested_host=requested_host,
        **flavors,
    )
    # NOTE: what the server holds now, with its consumer generation: the
    # executor's first write needs no read.
    # NOTE: on a host that is a tree of providers (a vGPU child, a sharing
    # provider's disk) the server's flavor is spread over several providers,
    # as recorded on the server; on a flat host it is all on the root.
    original = rs.normalize_allocations(
        server.allocations or rs.on(server.rp_uuid, flavors["old_resources"])
    )
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
    return migration


def check_upsize(db: Any, conf: cfg.ConfigOpts, server: Any, current: Any, wanted: Any) -> None:
    """Refuse taking ``server`` from flavor ``current`` to ``wanted`` (snapshots)
    when what that adds (``cores``, ``ram``; a decrease adds nothing) passes
    the project's or the server's user's limits, usage counted now.

    :raises OverQuota: a limit would be passed.
    """
    deltas = {
        "cores": int(wanted["vcpus"]) - int(current["vcpus"]),
        "ram": int(wanted["memory_mb"]) - int(current["memory_mb"]),
    }
    quota.check_server(db, conf, server.project_id, server.user_id, deltas)


def check_live_destination(db: Any, conf: Any, server: Any, host: str) -> Any:
    """The compute node a live migration may be sent to by name.

    :returns: the host's compute node.
    :raises Invalid: the host is the server's own, unknown, disabled or down
        (the API answers 400, as Nova).
    """
    if host == server.host:
        raise exception.Invalid(
            reason=f"server {server.uuid} already runs on host {host}: a live migration "
            "needs another host"
        )
    try:
        service = db.service_get_by_host(host)
    except exception.NotFound:
        raise exception.Invalid(reason=f"compute host {host} could not be found") from None
    if service.disabled:
        raise exception.Invalid(
            reason=f"compute host {host} is disabled"
            + (f" ({service.disabled_reason})" if service.disabled_reason else "")
        )
    if not host_api.service_is_up(service, conf.service_down_time):
        raise exception.Invalid(reason=f"compute service on host {host} is down")
    nodes = db.compute_nodes_by_host(host)
    if not nodes:
        raise exception.Invalid(reason=f"compute host {host} has reported no compute node yet")
    return nodes[0]


def begin_live_migration(
    db: Any,
    server_uuid: str,
    *,
    host: str | None = None,
    block_migration: bool | None = None,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a live migration: server ACTIVE -> MIGRATING (task ``migrating``),
    a new ``accepted`` migration of type ``live-migration``.

    The flavor does not change, and the migration holds the source as a
    resize's does with the ``legacy`` strategy: the server's allocation
    moves to the migration, the destination is claimed for the server.
    A host named by the caller is recorded as the migration's
    ``dest_host``: the scheduler is asked about that host alone.

    :param host: the destination (checked by :func:`check_live_destination`
        before this is called); None: the scheduler chooses.
    :param block_migration: recorded for the compute hosts (None: ``auto``).
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not ACTIVE with no task, or to be healed.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if server.status != "ACTIVE" or server.rp_uuid is None or server.needs_heal:
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=server.status + (" with allocations to heal" if server.needs_heal else ""),
            operation="live migration",
            expected="ACTIVE",
        )
    server = db.server_update(
        server_uuid,
        expected={
            "status": "ACTIVE",
            "vm_state": "active",
            "task_state": None,
            "needs_heal": False,
        },
        operation="live migration",
        status="MIGRATING",
        task_state="migrating",
    )
    LOG.info(
        "Live migration of server %s: block migration %s",
        server_uuid,
        "auto" if block_migration is None else block_migration,
    )
    return _begin_flavor_kept(
        db, server, "live-migration", host, action_api.LIVE_MIGRATION, context, "Live migration"
    )


def source_is_down(db: Any, conf: Any, server: Any) -> bool:
    """Whether the compute service of ``server``'s host is down or forced down
    (an evacuation needs it to be: the server must not run twice)."""
    try:
        service = db.service_get_by_host(server.host)
    except exception.NotFound:
        return True
    return not host_api.service_is_up(service, conf.service_down_time)


def begin_evacuation(
    db: Any,
    server_uuid: str,
    *,
    host: str | None = None,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record an evacuation: server -> REBUILD (task ``rebuilding``), a new
    ``accepted`` migration of type ``evacuation``.

    The caller has checked that the source's compute service is down
    (:func:`source_is_down`) and the named host, if any
    (:func:`check_live_destination`). The migration holds the source as a
    live migration's does.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not ACTIVE, SHUTOFF or ERROR with no task.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if server.rp_uuid is None:
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=f"{server.status} on no host",
            operation="evacuate",
            expected="ACTIVE, SHUTOFF or ERROR on a host",
        )
    server = db.server_update(
        server_uuid,
        expected={"status": ("ACTIVE", "SHUTOFF", "ERROR"), "task_state": None},
        operation="evacuate",
        status="REBUILD",
        task_state="rebuilding",
    )
    return _begin_flavor_kept(
        db, server, "evacuation", host, action_api.EVACUATE, context, "Evacuation"
    )


def _begin_flavor_kept(
    db: Any,
    server: Any,
    migration_type: str,
    host: str | None,
    action: str,
    context: RequestContext | None,
    what: str,
) -> Any:
    """The ``accepted`` migration of a move that keeps the flavor, holding
    what the server holds now, ``host`` recorded as its destination if named."""
    flavor = dict(server.flavor)
    try:
        resources = rs.stored_request(flavor).resources
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"server {server.uuid}'s own flavor cannot be read: {exc}"
        ) from None
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host=server.host,
        source_node=server.node,
        source_rp_uuid=server.rp_uuid,
        old_flavor=flavor,
        new_flavor=flavor,
        old_resources=resources,
        new_resources=resources,
        claim_strategy="legacy",
        project_id=server.project_id,
        user_id=server.user_id,
        migration_type=migration_type,
        status="accepted",
    )
    original = rs.normalize_allocations(server.allocations or rs.on(server.rp_uuid, resources))
    holdings = {
        **Holdings(server=original).to_dict(),
        "generations": {"server": server.placement_generation, "migration": None},
    }
    groups = {"old_group_providers": server.group_providers} if server.group_providers else {}
    migration = db.migration_update(
        migration.uuid,
        holdings=holdings,
        old_allocations=original if server.allocations else None,
        dest_host=host,
        **groups,
    )
    _record(db, context, server.uuid, action)
    LOG.info(
        "%s of server %s %s begins as migration %s",
        what,
        server.uuid,
        f"to host {host}" if host else "(the scheduler chooses the host)",
        migration.uuid,
    )
    return migration


def _begin_decision(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope,
    operation: str,
    values: dict[str, Any],
    context: RequestContext | None = None,
    quota_conf: cfg.ConfigOpts | None = None,
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
    if quota_conf is not None and operation == "revert":
        # NOTE: as Nova: in VERIFY_RESIZE the server counts at its new
        # flavor, so reverting a resize down adds the difference back.
        check_upsize(db, quota_conf, server, migration.new_flavor, migration.old_flavor)
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
    quota_conf: cfg.ConfigOpts | None = None,
) -> Any:
    """Record a revert: server REVERT_RESIZE, migration ``finished`` -> ``reverting``.

    :param context: the request; when given, its ``revertResize`` action is recorded.
    :param quota_conf: check quota first, as Nova: reverting a resize down
        gives back the larger old flavor.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not in VERIFY_RESIZE.
    :raises OverQuota: the old flavor no longer fits the project's limits.
    """
    return _begin_decision(
        db,
        server_uuid,
        project_id,
        "revert",
        {"status": "REVERT_RESIZE", "task_state": "resize_reverting"},
        context,
        quota_conf,
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
