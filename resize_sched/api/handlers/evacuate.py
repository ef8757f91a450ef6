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

from resize_sched import actions
from resize_sched.api import faults, schemas
from resize_sched.api.action_runner import Begun, ServerAction
from resize_sched.api.request import ApiRequest, json_response
from resize_sched.db import states
from resize_sched.policies import evacuate as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

# NOTE: Nova's alphabet: no look-alike letters or digits.
_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _evacuate(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
    """``{"evacuate": {"host": ..., "adminPass": ...}}``, its states checked.

    :returns: 200; ``{"adminPass": ...}`` before 2.14.
    :raises faults.Conflict: the server's host is up.
    :raises Invalid: the named host is the server's own, disabled or down: 400.
    :raises ComputeHostNotFound: the named host is unknown: 404.
    """
    if not actions.source_is_down(state.db, state.conf, server):
        raise faults.Conflict(f"Compute service of {server.host} is still in use.")
    host = args.get("host")
    if host is not None:
        actions.check_destination(
            state.db, state.conf, server, host, move=states.MIGRATION_TYPE_EVACUATION
        )
    migration = actions.begin_evacuation(
        state.db, server.uuid, host=host, project_id=req.project_scope(), context=req.context
    )
    if req.version.at_least("2.14"):
        response = webob.Response(status=200)
    else:
        password = args.get("adminPass") or "".join(secrets.choice(_ALPHABET) for _ in range(12))
        response = json_response({"adminPass": password})
    return Begun(
        migration.uuid,
        (
            "Evacuation of server %s from %s requested (migration %s, host %s)",
            server.uuid,
            server.host,
            migration.uuid,
            host or "chosen by the scheduler",
        ),
        response,
    )


#: ``evacuate``: the server's states (409), its host down (409), the named
#: host (404, 400); then the evacuation is recorded and cast.
evacuate = ServerAction(
    "evacuate",
    lambda req: schemas.evacuate(req.version),
    rules.EVACUATE,
    _evacuate,
    "evacuate_server",
    LOG,
    states_first=True,
)
