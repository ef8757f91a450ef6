"""The first step of each move of a server: a resize, a cold migration, a
live migration and an evacuation. The server is taken by compare-and-swap,
from the states the table allows, and its migration recorded with what it
holds now (:func:`~resize_sched.actions.common.record_migration`)."""

from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.actions.allowed import ALLOWED
from resize_sched.actions.common import (
    check_upsize,
    checked_request,
    own_resources,
    record_action,
    record_migration,
)
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.strategies import ClaimStrategy

LOG = logging.getLogger(__name__)

_RESIZE = ALLOWED["resize"]
_LIVE = ALLOWED["os-migrateLive"]
_EVACUATE = ALLOWED["evacuate"]


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
    new_flavor = flavor.to_snapshot()
    # NOTE: the new flavor is checked before anything is written or claimed.
    # The server's own snapshot is read as it was claimed (a NUMA spec this
    # version refuses left out): resizing away from it is how an operator
    # corrects such a server, and a revert gives the snapshot back as stored.
    old = own_resources(server)
    new = checked_request(new_flavor, f"flavor {flavor.flavorid}").resources
    if quota_conf is not None:
        check_upsize(db, quota_conf, server, dict(server.flavor), new_flavor)
    migration = _begin_move(
        db, strategy, server, old_resources=old, new_flavor=new_flavor, new_resources=new
    )
    record_action(db, context, server_uuid, action_api.RESIZE)
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
    migration = _begin_move(
        db,
        strategy,
        server,
        old_resources=own_resources(server),
        migration_type=states.MIGRATION_TYPE_MIGRATION,
        requested_host=host,
    )
    record_action(db, context, server_uuid, action_api.MIGRATE)
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
    if not _RESIZE.status_allows(server) or server.rp_uuid is None:
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=server.status,
            operation=operation,
            expected=_RESIZE.words,
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


def _begin_move(
    db: Any,
    strategy: ClaimStrategy,
    server: Any,
    *,
    migration_type: str = states.MIGRATION_TYPE_RESIZE,
    requested_host: str | None = None,
    **resources: Any,
) -> Any:
    """The server to (RESIZE, resize_prep) by compare-and-swap, and its
    migration recorded with what the server holds now."""
    # NOTE: a cold migration is a resize here too: the conflict says "resize".
    server = db.server_update(
        server.uuid,
        expected=_RESIZE.expected(),
        operation=_RESIZE.cas_operation,
        status=states.STATUS_RESIZE,
        task_state=states.TASK_RESIZE_PREP,
    )
    return record_migration(
        db,
        server,
        claim_strategy=strategy.name,
        migration_type=migration_type,
        requested_host=requested_host,
        **resources,
    )


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

    :param host: the destination (checked by
        :func:`~resize_sched.actions.destinations.check_destination` before
        this is called); None: the scheduler chooses.
    :param block_migration: recorded for the compute hosts (None: ``auto``).
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not ACTIVE with no task, or to be healed.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if not _LIVE.status_allows(server) or server.rp_uuid is None or server.needs_heal:
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=server.status + (" with allocations to heal" if server.needs_heal else ""),
            operation=_LIVE.cas_operation,
            expected=_LIVE.words,
        )
    server = db.server_update(
        server_uuid,
        expected=_LIVE.expected(),
        operation=_LIVE.cas_operation,
        status=states.STATUS_MIGRATING,
        task_state=states.TASK_MIGRATING,
    )
    LOG.info(
        "Live migration of server %s: block migration %s",
        server_uuid,
        "auto" if block_migration is None else block_migration,
    )
    return _begin_flavor_kept(
        db, server, states.MIGRATION_TYPE_LIVE, host, action_api.LIVE_MIGRATION, context
    )


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
    (:func:`~resize_sched.actions.destinations.source_is_down`) and the
    named host, if any
    (:func:`~resize_sched.actions.destinations.check_destination`). The
    migration holds the source as a live migration's does.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not ACTIVE, SHUTOFF or ERROR with no task.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if server.rp_uuid is None:
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=f"{server.status} on no host",
            operation=_EVACUATE.cas_operation,
            expected=_EVACUATE.words,
        )
    server = db.server_update(
        server_uuid,
        expected=_EVACUATE.expected(),
        operation=_EVACUATE.cas_operation,
        status=states.STATUS_REBUILD,
        task_state=states.TASK_REBUILDING,
    )
    return _begin_flavor_kept(
        db, server, states.MIGRATION_TYPE_EVACUATION, host, action_api.EVACUATE, context
    )


#: How the log names a move that keeps the flavor, by migration type.
_KEPT_NAMES = {
    states.MIGRATION_TYPE_LIVE: "Live migration",
    states.MIGRATION_TYPE_EVACUATION: "Evacuation",
}


def _begin_flavor_kept(
    db: Any,
    server: Any,
    migration_type: str,
    host: str | None,
    action: str,
    context: RequestContext | None,
) -> Any:
    """The ``accepted`` migration of a move that keeps the flavor (``legacy``
    holdings), ``host`` recorded as its destination if named."""
    migration = record_migration(
        db,
        server,
        claim_strategy="legacy",
        migration_type=migration_type,
        old_resources=own_resources(server),
        status=states.MIGRATION_ACCEPTED,
        dest_host=host,
    )
    record_action(db, context, server.uuid, action)
    LOG.info(
        "%s of server %s %s begins as migration %s",
        _KEPT_NAMES[migration_type],
        server.uuid,
        f"to host {host}" if host else "(the scheduler chooses the host)",
        migration.uuid,
    )
    return migration
