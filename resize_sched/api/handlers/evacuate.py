"""``evacuate``: ``POST /v2.1/servers/{id}/action`` rebuilding a server
whose host is down on another host.

As Nova's: the body follows the microversion
(:func:`resize_sched.api.schemas.evacuate`: ``onSharedStorage`` required
before 2.14, ``host`` optional, ``force`` from 2.29 to 2.67), only an
administrator may ask (``os_compute_api:os-evacuate``), the server must be
ACTIVE, SHUTOFF or ERROR with no task (409), and its host's compute service
must be down or forced down (409 otherwise: the server would run twice). A
named host must be another one (400) and known (404), enabled and up (400).
Before 2.14 the answer carries the ``adminPass`` (the one given, else a new
one); from 2.14 it has no body. ``force`` is accepted; the named host is
asked of Placement either way.

Every check comes before the first write; a refused request changes nothing.
"""

import secrets
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, json_response
from resize_sched.db import models
from resize_sched.policies import evacuate as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

_STATES = (models.STATUS_ACTIVE, models.STATUS_SHUTOFF, models.STATUS_ERROR)
# NOTE: Nova's alphabet: no look-alike letters or digits.
_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def evacuate(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``{"evacuate": {"host": ..., "adminPass": ...}}``.

    :returns: 200; ``{"adminPass": ...}`` before 2.14.
    :raises faults.BadRequest: a bad body; the named host is the server's
        own, disabled or down.
    :raises faults.NotFound: the named host is unknown.
    :raises ServerNotFound: unknown server, or another project's: 404.
    :raises faults.Forbidden: the policy refuses (non-administrators).
    :raises faults.Conflict: the server's state, or its host is up.
    """
    schemas.validate(body, schemas.evacuate(req.version))
    server = policy.authorized_server(req, state.db, rules.EVACUATE, server_id)
    args = body["evacuate"]
    if not state.conductor.can_live_migrate:
        raise faults.Conflict(
            "Evacuation needs conductor RPC 1.5; [upgrade_levels] conductor caps it lower "
            "(an upgrade in progress)."
        )
    if server.status not in _STATES or server.task_state is not None:
        raise faults.Conflict(
            f"Cannot 'evacuate' instance {server.uuid} while it is in "
            + (
                f"task_state {server.task_state}"
                if server.task_state
                else f"vm_state {server.vm_state}"
            )
        )
    if not actions.source_is_down(state.db, state.conf, server):
        raise faults.Conflict(f"Compute service of {server.host} is still in use.")
    host = args.get("host")
    if host is not None:
        try:
            state.db.service_get_by_host(host)
        except exception.NotFound:
            raise faults.NotFound(f"Compute host {host} could not be found.") from None
        try:
            actions.check_live_destination(state.db, state.conf, server, host)
        except exception.Invalid as exc:
            raise faults.BadRequest(exc.message) from None
    migration = actions.begin_evacuation(
        state.db, server.uuid, host=host, project_id=req.project_scope(), context=req.context
    )
    state.conductor.evacuate_server(req.context, migration.uuid)
    LOG.info(
        "Evacuation of server %s from %s requested (migration %s, host %s)",
        server.uuid,
        server.host,
        migration.uuid,
        host or "chosen by the scheduler",
    )
    if req.version.at_least("2.14"):
        return webob.Response(status=200)
    password = args.get("adminPass") or "".join(secrets.choice(_ALPHABET) for _ in range(12))
    return json_response({"adminPass": password})
