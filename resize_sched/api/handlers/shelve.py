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

from oslo_log import log as logging

from resize_sched import actions
from resize_sched.api import faults, schemas
from resize_sched.api.action_runner import Begun, ServerAction
from resize_sched.api.handlers import availability_zones
from resize_sched.api.request import ApiRequest
from resize_sched.policies import shelve as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def _shelve(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
    """``shelve``: power the server off and keep it (offloaded per
    ``[DEFAULT] shelved_offload_time``). 202, no body."""
    actions.begin_shelve(state.db, server_id, project_id=req.project_scope(), context=req.context)
    return Begun(server_id, ("Shelve of server %s requested", server_id))


def _shelve_offload(
    state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any
) -> Begun:
    """``shelveOffload``: remove a SHELVED server from its host. 202, no body."""
    actions.begin_shelve_offload(
        state.db, server_id, project_id=req.project_scope(), context=req.context
    )
    return Begun(server_id, ("Shelve offload of server %s requested", server_id))


def _zone(req: ApiRequest, args: Any) -> Any:
    """The zone an unshelve asks for (2.77), else :data:`actions.KEEP_ZONE`."""
    asked = args if req.version.at_least("2.77") else None
    return asked["availability_zone"] if asked else actions.KEEP_ZONE


def _check_zone(state: "ApiState", req: ApiRequest, server: Any, args: Any) -> None:
    """A zone asked for: the server's state (409) before the zone (400), as Nova."""
    zone = _zone(req, args)
    if zone is not actions.KEEP_ZONE:
        actions.check_unshelvable(server, zone)
        if zone not in availability_zones.available_zones(state):
            raise faults.BadRequest("The requested availability zone is not available")


def _unshelve(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
    """``unshelve``: start a SHELVED server where it is, or place an
    offloaded one (in ``availability_zone`` from 2.77). 202, no body."""
    zone = _zone(req, args)
    server = actions.begin_unshelve(
        state.db,
        server_id,
        availability_zone=zone,
        project_id=req.project_scope(),
        context=req.context,
    )
    return Begun(
        server_id,
        (
            "Unshelve of server %s (%s) requested%s",
            server_id,
            server.status,
            f" into zone {zone}" if zone is not actions.KEEP_ZONE else "",
        ),
    )


def _unshelve_schema(req: ApiRequest) -> dict[str, Any]:
    return schemas.UNSHELVE_V277 if req.version.at_least("2.77") else schemas.UNSHELVE


shelve = ServerAction("shelve", schemas.SHELVE, rules.SHELVE, _shelve, "shelve_server", LOG)
shelve_offload = ServerAction(
    "shelveOffload",
    schemas.SHELVE_OFFLOAD,
    rules.SHELVE_OFFLOAD,
    _shelve_offload,
    "shelve_offload_server",
    LOG,
)
unshelve = ServerAction(
    "unshelve",
    _unshelve_schema,
    rules.UNSHELVE,
    _unshelve,
    "unshelve_server",
    LOG,
    before_gate=_check_zone,
)

#: The actions served here, by body key.
ACTIONS = {"shelve": shelve, "shelveOffload": shelve_offload, "unshelve": unshelve}
