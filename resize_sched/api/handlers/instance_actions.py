"""Instance actions: ``/v2.1/servers/{server_id}/os-instance-actions``.

What was asked of a server (``create``, ``resize``, ``confirmResize``,
``revertResize``, ``delete``) and the steps each ran, recorded by
:mod:`resize_sched.db.action_api`. Fields follow Nova's per microversion:

* 2.21: a deleted server's actions can still be read.
* 2.51: the events are shown to whoever may show the action; ``traceback``
  only with ``os_compute_api:os-instance-actions:events`` (admins by
  default). Before 2.51 the events are shown only with that rule.
* 2.58: ``updated_at``; the list takes ``limit``, ``marker`` (a request id)
  and ``changes-since`` (from 2.66 also ``changes-before``), newest first.
* 2.62: ``hostId`` on every event; ``host`` with the ``events`` rule.

Events ``details`` (2.84) lie above our highest microversion. A failed step's
``traceback`` says why: for a resize no host could take, ``NoValidHost
(deferred)`` or ``NoValidHost (infeasible)`` and the scheduler's reason.
"""

import datetime
from typing import TYPE_CHECKING, Any

import webob

from resize_sched.api import faults, policy
from resize_sched.api.handlers.server_view import host_id
from resize_sched.api.request import (
    ApiRequest,
    changed_between,
    json_response,
    nova_timestamp,
    paginate,
)
from resize_sched.db import models
from resize_sched.policies import instance_actions as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState


def _server(state: "ApiState", req: ApiRequest, rule: str, server_id: str) -> models.Server:
    server = state.db.server_get(
        server_id, project_id=req.project_scope(), read_deleted=req.version.at_least("2.21")
    )
    policy.authorize(req, rule, policy.server_target(server))
    return server


def _action_view(req: ApiRequest, action: models.InstanceAction) -> dict[str, Any]:
    body: dict[str, Any] = {
        "action": action.action,
        "instance_uuid": action.server_uuid,
        "request_id": action.request_id,
        "user_id": action.user_id,
        "project_id": action.project_id,
        "start_time": nova_timestamp(action.start_time),
        "message": action.message,
    }
    if req.version.at_least("2.58"):
        body["updated_at"] = nova_timestamp(action.updated_at or action.start_time)
    return body


def _event_view(
    req: ApiRequest, event: models.InstanceActionEvent, project_id: str | None, full: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "event": event.event,
        "start_time": nova_timestamp(event.start_time),
        "finish_time": nova_timestamp(event.finish_time),
        "result": event.result,
    }
    if full:
        body["traceback"] = event.traceback
    if req.version.at_least("2.62"):
        if full:
            body["host"] = event.host
        body["hostId"] = host_id(project_id, event.host)
    return body


def _changed(action: models.InstanceAction) -> datetime.datetime:
    return action.updated_at or action.start_time


def index(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``GET /servers/{server_id}/os-instance-actions``: the server's actions, newest first.

    :returns: ``{"instanceActions": [...]}``, 200 (with ``links`` when a
        ``limit`` cut the list, 2.58+).
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:os-instance-actions:list`` refuses.
    :raises faults.BadRequest: a bad filter, limit or marker (2.58+).
    """
    server = _server(state, req, rules.LIST, server_id)
    actions = state.db.action_list(server.uuid)
    links: list[dict[str, str]] = []
    if req.version.at_least("2.58"):
        actions = changed_between(
            req,
            actions,
            _changed,
            since_from="2.58",
            reversed_message=(
                "The value of changes-since must be less than or equal to changes-before."
            ),
        )
        actions, links = paginate(
            req, actions, "request_id", f"servers/{server.uuid}/os-instance-actions"
        )
    body: dict[str, Any] = {"instanceActions": [_action_view(req, a) for a in actions]}
    if links:
        body["links"] = links
    return json_response(body)


def show(state: "ApiState", req: ApiRequest, server_id: str, request_id: str) -> webob.Response:
    """``GET /servers/{server_id}/os-instance-actions/{request_id}``: one action and its events.

    :returns: ``{"instanceAction": {..., "events": [...]}}``, 200.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.NotFound: no action of this server has that request id.
    :raises faults.Forbidden: ``os_compute_api:os-instance-actions:show`` refuses.
    """
    server = _server(state, req, rules.SHOW, server_id)
    action = state.db.action_get_by_request_id(server.uuid, request_id)
    if action is None:
        raise faults.NotFound(f"Action {request_id} not found")
    body = _action_view(req, action)
    full = policy.allowed(req, rules.EVENTS, policy.server_target(server))
    if full or req.version.at_least("2.51"):
        project_id = action.project_id or server.project_id
        events = state.db.action_events(action.id)
        body["events"] = [_event_view(req, event, project_id, full) for event in events]
    return json_response({"instanceAction": body})
