"""Server actions: ``POST /v2.1/servers/{id}/action`` with ``resize``,
``confirmResize``, ``revertResize``, ``os-stop``, ``os-start`` or
(administrators) ``os-resetState``, the cold migration of :mod:`.move_actions`,
``os-migrateLive`` (:mod:`resize_sched.api.handlers.live_migrate`),
``evacuate`` (:mod:`resize_sched.api.handlers.evacuate`) and ``shelve``,
``shelveOffload``, ``unshelve`` (:mod:`resize_sched.api.handlers.shelve`).

Each is served by :class:`resize_sched.api.action_runner.ServerAction`: it
runs the database-only first step from :mod:`resize_sched.actions` (a
compare-and-swap that records the intent, so of two concurrent requests one
gets a 409) and then casts to the conductor, which does the Placement work.
Every check happens before the first write: a refused action changes
nothing. The server is looked up first, so an unknown (or another
project's) server is a 404 whatever else is wrong with the request.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.action_runner import Begun, ServerAction, Step
from resize_sched.api.handlers import move_actions, shelve
from resize_sched.api.handlers.evacuate import evacuate
from resize_sched.api.handlers.flavors import visible_flavor
from resize_sched.api.handlers.live_migrate import live_migrate
from resize_sched.api.handlers.servers import flavor_ref
from resize_sched.api.request import ApiRequest, empty_response
from resize_sched.db import action_api, states
from resize_sched.policies import servers as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: Any action body: an object naming exactly one action.
_ACTION = {"type": "object", "minProperties": 1, "maxProperties": 1}


def _resize(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
    flavorid = flavor_ref(args["flavorRef"])
    strategy = state.claim_strategy()
    try:
        visible_flavor(req, state.db, flavorid)
        migration = actions.begin_resize(
            state.db,
            strategy,
            server_id,
            flavorid,
            project_id=req.project_scope(),
            context=req.context,
            quota_conf=state.conf,
        )
    except exception.FlavorNotFound:
        raise faults.BadRequest(f"Flavor {flavorid} could not be found.") from None
    return Begun(
        migration.uuid,
        (
            "Resize of server %s to flavor %s requested (migration %s)",
            server_id,
            flavorid,
            migration.uuid,
        ),
    )


def _decision(revert: bool) -> Step:
    """The first step of a confirm or a revert (the revert checks quota, as Nova)."""
    what = "Revert" if revert else "Confirm"

    def step(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
        scope, ctxt = req.project_scope(), req.context
        if revert:
            migration = actions.begin_revert(
                state.db, server_id, project_id=scope, context=ctxt, quota_conf=state.conf
            )
        else:
            migration = actions.begin_confirm(state.db, server_id, project_id=scope, context=ctxt)
        return Begun(
            migration.uuid,
            (f"{what} of server %s requested (migration %s)", server_id, migration.uuid),
        )

    return step


def _power(stop: bool) -> Step:
    """The first step of a stop or a start."""

    def step(state: "ApiState", req: ApiRequest, server_id: str, server: Any, args: Any) -> Begun:
        actions.begin_power(
            state.db, server_id, stop=stop, project_id=req.project_scope(), context=req.context
        )
        return Begun(
            server_id, ("%s of server %s requested", "Stop" if stop else "Start", server_id)
        )

    return step


#: ``os-resetState``'s states: (status, vm_state), as Nova maps them.
_RESET_STATES = {
    "active": (states.STATUS_ACTIVE, states.VM_ACTIVE),
    "error": (states.STATUS_ERROR, states.VM_ERROR),
}


def _reset_state(
    state: "ApiState", req: ApiRequest, server_id: str, body: dict[str, Any]
) -> webob.Response:
    """An operator sets a stuck server's state, as Nova: vm_state active or
    error, no task; the action is recorded. Nothing else changes: not the
    host, nor what Placement holds.

    One refusal Nova does not make: ``active`` while a resize of the server
    is in flight (409). Its migration holds the server's allocations and
    the conductor (or its recovery) still finishes it; an ACTIVE server
    could be resized again meanwhile. ``error`` is always taken (a delete
    then closes the resize).
    """
    schemas.validate(body, schemas.RESET_STATE)
    server = policy.authorized_server(req, state.db, rules.RESET_STATE, server_id)
    wanted = body["os-resetState"]["state"]
    if wanted == "active":
        in_flight = state.db.migration_list(
            server_uuid=server.uuid, statuses=states.IN_FLIGHT_STATUSES
        )
        if in_flight:
            raise faults.Conflict(
                f"Cannot reset server {server.uuid} to active while its resize "
                f"(migration {in_flight[-1].uuid}, {in_flight[-1].status}) is in flight; "
                "the conductor finishes or recovers it. Reset it to error to stop using it."
            )
    status, vm_state = _RESET_STATES[wanted]
    ctxt = req.context
    state.db.action_start(
        server.uuid,
        ctxt.request_id,
        action_api.RESET_STATE,
        user_id=ctxt.user_id,
        project_id=ctxt.project_id,
    )
    state.db.server_update(server.uuid, status=status, vm_state=vm_state, task_state=None)
    state.db.action_finish(server.uuid, [action_api.RESET_STATE])
    LOG.info("Server %s reset to %s by %s", server.uuid, wanted, ctxt.user_id)
    return empty_response(202)


Action = Callable[[Any, ApiRequest, str, dict[str, Any]], webob.Response]

#: The actions served, by body key.
ACTIONS: dict[str, Action] = {
    "resize": ServerAction("resize", schemas.RESIZE, rules.RESIZE, _resize, "resize_server", LOG),
    "confirmResize": ServerAction(
        "confirmResize",
        schemas.CONFIRM_RESIZE,
        rules.CONFIRM_RESIZE,
        _decision(revert=False),
        "confirm_resize",
        LOG,
        status=204,
    ),
    "revertResize": ServerAction(
        "revertResize",
        schemas.REVERT_RESIZE,
        rules.REVERT_RESIZE,
        _decision(revert=True),
        "revert_resize",
        LOG,
    ),
    "os-resetState": _reset_state,
    "os-stop": ServerAction(
        "os-stop", schemas.STOP, rules.STOP, _power(stop=True), "stop_server", LOG
    ),
    "os-start": ServerAction(
        "os-start", schemas.START, rules.START, _power(stop=False), "start_server", LOG
    ),
    **move_actions.ACTIONS,
    "os-migrateLive": live_migrate,
    "evacuate": evacuate,
    **shelve.ACTIONS,
}


def action(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``POST /servers/{server_id}/action``.

    :returns: 202 for ``resize`` and ``revertResize``, 204 for ``confirmResize``.
    :raises faults.BadRequest: a bad body, an unknown action, an unknown
        flavor, or a resize to the current flavor (Invalid).
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: the action's policy rule refuses
        (``os_compute_api:servers:resize``, ``:confirm_resize``, ``:revert_resize``).
    :raises ServerStateConflict: the server is not in the state the action
        needs (another action won): 409.
    """
    body = req.validated_body(_ACTION)
    (name,) = body
    handler = ACTIONS.get(name)
    if handler is None:
        # NOTE: Nova looks the server up first here too.
        state.db.server_get(server_id, project_id=req.project_scope())
        raise faults.BadRequest(f"There is no such action: {name}")
    return handler(state, req, server_id, body)
