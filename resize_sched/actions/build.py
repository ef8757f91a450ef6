"""The first step of a server's build: record it in BUILD with its request
spec (after the quota check), before any Placement call."""

from collections.abc import Sequence
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception, quota
from resize_sched.actions.common import checked_request, record_action
from resize_sched.context import RequestContext
from resize_sched.db import action_api

LOG = logging.getLogger(__name__)


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
    request = checked_request(flavor.to_snapshot(), f"flavor {flavorid}")
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
    record_action(db, context, server.uuid, action_api.CREATE)
    LOG.info("Server %s (%s) recorded with flavor %s", server.uuid, name, flavorid)
    return server
