"""What every action's first step shares: the server taken by
compare-and-swap and the action recorded, a flavor read as a resource
request, the quota check of a bigger flavor, and the migration a move
records with what the server holds now."""

from typing import Any

from oslo_config import cfg

from resize_sched import exception, quota
from resize_sched import resources as rs
from resize_sched.actions.allowed import Allowed
from resize_sched.context import RequestContext
from resize_sched.db.project_scope import ProjectScope
from resize_sched.strategies import Holdings


def record_action(db: Any, context: RequestContext | None, server_uuid: str, action: str) -> None:
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


def checked_request(snapshot: Any, what: str) -> rs.ResourceRequest:
    """:func:`rs.flavor_request` of ``snapshot``, a refusal as InvalidFlavor
    that says what to do."""
    try:
        return rs.flavor_request(snapshot)
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"{what} has extra specs this version refuses: {exc}. Correct the "
            "flavor's extra specs (resize-sched-status upgrade check lists them)"
        ) from None


def own_resources(server: Any) -> dict[str, int]:
    """What the server's own flavor snapshot holds, read as it was claimed."""
    try:
        return rs.stored_request(dict(server.flavor)).resources
    except ValueError as exc:
        raise exception.InvalidFlavor(
            reason=f"server {server.uuid}'s own flavor cannot be read: {exc}"
        ) from None


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


def record_migration(
    db: Any,
    server: Any,
    *,
    claim_strategy: str,
    migration_type: str,
    old_resources: dict[str, int],
    new_flavor: dict[str, Any] | None = None,
    new_resources: dict[str, int] | None = None,
    status: str | None = None,
    requested_host: str | None = None,
    dest_host: str | None = None,
) -> Any:
    """Record the migration of a move of ``server`` (already taken by its
    compare-and-swap), seeded with what the server holds now.

    Every move (resize, cold and live migration, evacuation) starts here, so
    every migration's first holdings are recorded the same way. The old
    flavor is the server's own.

    :param claim_strategy: the strategy's name every later phase uses.
    :param old_resources: what the server's own flavor holds (read by the
        caller where a refusal must come before any write).
    :param new_flavor: the flavor it moves to (None: its own, kept).
    :param new_resources: what that flavor needs (None: ``old_resources``).
    :param status: its first status (None: the database's default,
        ``pre-migrating``).
    :param requested_host: the only host a cold migration may go to.
    :param dest_host: the host a live migration or evacuation was sent to
        by name (the scheduler is asked about that host alone).
    :returns: the migration row.
    """
    old_flavor = dict(server.flavor)
    created = {"status": status} if status is not None else {}
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host=server.host,
        source_node=server.node,
        source_rp_uuid=server.rp_uuid,
        old_flavor=old_flavor,
        new_flavor=old_flavor if new_flavor is None else new_flavor,
        old_resources=old_resources,
        new_resources=old_resources if new_resources is None else new_resources,
        claim_strategy=claim_strategy,
        project_id=server.project_id,
        user_id=server.user_id,
        migration_type=migration_type,
        requested_host=requested_host,
        **created,
    )
    # NOTE: what the server holds now, with its consumer generation: the
    # executor's first write needs no read.
    # NOTE: on a host that is a tree of providers (a vGPU child, a sharing
    # provider's disk) the server's flavor is spread over several providers,
    # as recorded on the server; on a flat host it is all on the root.
    original = rs.normalize_allocations(server.allocations or rs.on(server.rp_uuid, old_resources))
    holdings = {
        **Holdings(server=original).to_dict(),
        "generations": {"server": server.placement_generation, "migration": None},
    }
    # NOTE: which provider holds which request group, when recorded: the
    # resize grows each group where it is, a revert gives the map back.
    extra: dict[str, Any] = {}
    if server.group_providers:
        extra["old_group_providers"] = server.group_providers
    if dest_host is not None:
        extra["dest_host"] = dest_host
    return db.migration_update(
        migration.uuid,
        holdings=holdings,
        old_allocations=original if server.allocations else None,
        **extra,
    )


def take_server(
    db: Any,
    server_uuid: str,
    allowed: Allowed,
    *,
    project_id: ProjectScope,
    context: RequestContext | None,
    recorded: str,
    on_host: bool = False,
    **values: Any,
) -> Any:
    """Take the server for an action by compare-and-swap from the states the
    table allows, set ``values``, and record the action.

    :param allowed: the action's entry in the table.
    :param recorded: the instance action recorded (when a request made it).
    :param on_host: refuse a server on no host first.
    :returns: the server as updated.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not in a state the action starts from.
    """
    server = db.server_get(server_uuid, project_id=project_id)
    if on_host:
        require_host(server, allowed.cas_operation)
    server = db.server_update(
        server_uuid, expected=allowed.expected(), operation=allowed.cas_operation, **values
    )
    record_action(db, context, server_uuid, recorded)
    return server


def require_host(server: Any, operation: str) -> None:
    """Refuse an action that needs the server on a host (stop, shelve) when
    it has none (its build failed before one was chosen).

    :raises ServerStateConflict: it is on no host.
    """
    if server.host is None:
        raise exception.ServerStateConflict(
            server_id=server.uuid, actual="on no host", operation=operation, expected="on a host"
        )
