"""Shelving: ``shelve``, ``shelveOffload`` and ``unshelve`` actions.

Served through ``POST /servers/{id}/action`` (:mod:`.server_actions` routes
them), as Nova's: the server first (404), its policy rule (403), the body's
zone (400), its state (409). The database-only first step
(:mod:`resize_sched.actions`) records the intent by compare-and-swap, so of
two concurrent requests one gets a 409, and a refused request changes
nothing; the conductor is then cast (conductor RPC 1.6; refused with a 409
while the conductor is capped lower, before anything is recorded).

``unshelve`` takes an ``availability_zone`` from microversion 2.77 (only
for a SHELVED_OFFLOADED server: 409 otherwise; an unknown zone: 400). The
``host`` of 2.91 is not served: the API's highest microversion is 2.80.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions
from resize_sched.api import faults, policy, schemas
from resize_sched.api.handlers import availability_zones
from resize_sched.api.request import ApiRequest, empty_response
from resize_sched.policies import shelve as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def _check_conductor(state: "ApiState") -> None:
    if not state.conductor.can_shelve:
        # NOTE: checked before anything is recorded: an older conductor
        # ([upgrade_levels] conductor below 1.6) would drop the cast.
        raise faults.Conflict(
            "Shelving servers needs conductor RPC 1.6; [upgrade_levels] conductor caps it "
            "lower (an upgrade in progress)."
        )


def shelve(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``shelve``: power the server off and keep it (offloaded per
    ``[DEFAULT] shelved_offload_time``). 202, no body."""
    schemas.validate(body, schemas.SHELVE)
    policy.authorized_server(req, state.db, rules.SHELVE, server_id)
    _check_conductor(state)
    actions.begin_shelve(state.db, server_id, project_id=req.project_scope(), context=req.context)
    state.conductor.shelve_server(req.context, server_id)
    LOG.info("Shelve of server %s requested", server_id)
    return empty_response(202)


def shelve_offload(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``shelveOffload``: remove a SHELVED server from its host. 202, no body."""
    schemas.validate(body, schemas.SHELVE_OFFLOAD)
    policy.authorized_server(req, state.db, rules.SHELVE_OFFLOAD, server_id)
    _check_conductor(state)
    actions.begin_shelve_offload(
        state.db, server_id, project_id=req.project_scope(), context=req.context
    )
    state.conductor.shelve_offload_server(req.context, server_id)
    LOG.info("Shelve offload of server %s requested", server_id)
    return empty_response(202)


def unshelve(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """``unshelve``: start a SHELVED server where it is, or place an
    offloaded one (in ``availability_zone`` from 2.77). 202, no body."""
    at_277 = req.version.at_least("2.77")
    schemas.validate(body, schemas.UNSHELVE_V277 if at_277 else schemas.UNSHELVE)
    server = policy.authorized_server(req, state.db, rules.UNSHELVE, server_id)
    zone: Any = actions.KEEP_ZONE
    asked = body["unshelve"] if at_277 else None
    if asked:
        zone = asked["availability_zone"]
        # NOTE: Nova's order: the state (409) before the zone (400).
        actions.check_unshelvable(server, zone)
        if zone not in availability_zones.available_zones(state):
            raise faults.BadRequest("The requested availability zone is not available")
    _check_conductor(state)
    server = actions.begin_unshelve(
        state.db,
        server_id,
        availability_zone=zone,
        project_id=req.project_scope(),
        context=req.context,
    )
    state.conductor.unshelve_server(req.context, server_id)
    LOG.info(
        "Unshelve of server %s (%s) requested%s",
        server_id,
        server.status,
        f" into zone {zone}" if zone is not actions.KEEP_ZONE else "",
    )
    return empty_response(202)


#: The actions served here, by body key.
ACTIONS = {"shelve": shelve, "shelveOffload": shelve_offload, "unshelve": unshelve}
