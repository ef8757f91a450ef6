"""The actions that move a server between hosts: ``migrate`` (cold migration).

Served through ``POST /servers/{id}/action`` (:mod:`.server_actions` routes
them). As every action, all checks come before the first write, in Nova's
order: the server (404), the policy (403), its state (409), then the named
host (400); a refused request changes nothing. The database-only first step
(:func:`resize_sched.actions.begin_migrate`) then records the migration and
the conductor is cast ``resize_server``: a cold migration runs the resize's
steps, so an older conductor serves it too.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, empty_response
from resize_sched.policies import migrate_server as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def checked_host(state: "ApiState", host: str, server: Any) -> str:
    """``host`` if a server may be moved there: a compute host we know, enabled,
    not the server's own.

    :raises faults.BadRequest: unknown, disabled, or the server's own host.
    """
    if host == server.host:
        raise faults.BadRequest(
            f"The target host can't be the same one: server {server.uuid} is on host {host}."
        )
    try:
        service = state.db.service_get_by_host(host)
    except exception.NotFound:
        raise faults.BadRequest(f"Compute host {host} could not be found.") from None
    if service.disabled:
        why = f" ({service.disabled_reason})" if service.disabled_reason else ""
        raise faults.BadRequest(
            f"Compute host {host} is disabled{why}: enable it "
            f"(openstack compute service set --enable {host} nova-compute) or name another."
        )
    return host


def migrate(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``migrate``: cold migrate the server (to ``host`` from 2.56).

    :returns: 202, no body.
    """
    at_256 = req.version.at_least("2.56")
    schemas.validate(body, schemas.MIGRATE_V256 if at_256 else schemas.MIGRATE)
    host = (body["migrate"] or {}).get("host")
    server = policy.authorized_server(req, state.db, rules.MIGRATE, server_id)
    if host is not None:
        policy.authorize(req, rules.MIGRATE_HOST, policy.server_target(server))
    actions.check_movable(server, "migrate")
    if host is not None:
        checked_host(state, host, server)
    migration = actions.begin_migrate(
        state.db,
        state.claim_strategy(),
        server_id,
        host,
        project_id=req.project_scope(),
        context=req.context,
    )
    state.conductor.resize_server(req.context, migration.uuid)
    LOG.info(
        "Cold migration of server %s%s requested (migration %s)",
        server_id,
        f" to host {host}" if host else "",
        migration.uuid,
    )
    return empty_response(202)


#: The actions served here, by body key.
ACTIONS = {"migrate": migrate}
