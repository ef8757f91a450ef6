"""A server's metadata: ``/v2.1/servers/{server_id}/metadata[/{key}]``.

The owner's key/value pairs, as Nova serves them: list, merge (``POST``),
replace (``PUT``), and one item shown, set or deleted. Reading works in
any state; a change needs the server ACTIVE or SHUTOFF with no task in
flight (Nova's rule), else 409. Each change is one compare-and-swap on the
row as read (its ``updated_at`` and state), so two concurrent changes never
lose one another: the loser reads again and, if the server still takes
changes, applies its own to what the winner left. The pairs are kept in
``servers.metadata_items``; more than the server create allows (Nova's
default ``metadata_items`` quota, 128) is a 403 that changes nothing.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

import webob
from oslo_log import log as logging

from resize_sched import actions, exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.handlers.servers import check_metadata_quota
from resize_sched.api.request import ApiRequest, empty_response, json_response
from resize_sched.policies import server_metadata as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The states whose metadata may change (vm_state active or stopped, no
#: task in flight), as Nova: the table's entry.
_ALLOWED = actions.ALLOWED["metadata"]

#: How often a change lost to a concurrent one is tried again on the new row.
_ATTEMPTS = 5

Change = Callable[[dict[str, str]], dict[str, str]]


def _change(
    state: "ApiState", req: ApiRequest, server_id: str, rule: str, change: Change
) -> dict[str, str]:
    """Apply ``change`` to the server's metadata in one compare-and-swap.

    :param change: the new pairs from the current ones; it raises a fault
        to refuse (nothing is written then).
    :returns: the metadata as stored.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises ServerStateConflict: the server does not take changes now: 409.
    """
    server = policy.authorized_server(req, state.db, rule, server_id)
    for attempt in range(_ATTEMPTS):
        if not _ALLOWED.allows(server):
            raise exception.ServerStateConflict(
                server_id=server.uuid,
                actual=f"{server.vm_state}/{server.task_state}",
                expected=_ALLOWED.words,
                operation=_ALLOWED.cas_operation,
            )
        metadata = change(dict(server.metadata_items or {}))
        check_metadata_quota(state, server, metadata)
        try:
            server = state.db.server_update(
                server.uuid,
                expected=_ALLOWED.expected(updated_at=server.updated_at),
                operation=_ALLOWED.cas_operation,
                metadata_items=metadata or None,
            )
        except exception.ServerStateConflict:
            if attempt == _ATTEMPTS - 1:
                raise
            # NOTE: another change (or a task) won; read again and decide anew.
            server = state.db.server_get(server.uuid, project_id=req.project_scope())
            continue
        LOG.info("Server %s metadata changed: %d items", server.uuid, len(metadata))
        return dict(server.metadata_items or {})
    raise AssertionError("unreachable")  # pragma: no cover


def _item(metadata: dict[str, str], key: str) -> str:
    if key not in metadata:
        raise faults.NotFound("Metadata item was not found")
    return metadata[key]


def index(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``GET /servers/{server_id}/metadata``.

    :returns: ``{"metadata": {...}}``, 200.
    :raises ServerNotFound: unknown, or another project's: 404.
    """
    server = policy.authorized_server(req, state.db, rules.INDEX, server_id)
    return json_response({"metadata": dict(server.metadata_items or {})})


def create(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``POST /servers/{server_id}/metadata``: add these pairs (a key already
    there takes the new value).

    :returns: ``{"metadata": {...}}`` (every pair now), 200.
    :raises faults.BadRequest: a bad body. :raises faults.Forbidden: too many items.
    """
    policy.authorized_server(req, state.db, rules.CREATE, server_id)
    new = req.validated_body(schemas.METADATA_SET)["metadata"]
    metadata = _change(state, req, server_id, rules.CREATE, lambda old: {**old, **new})
    return json_response({"metadata": metadata})


def update_all(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``PUT /servers/{server_id}/metadata``: these pairs and no others.

    :returns: ``{"metadata": {...}}``, 200.
    :raises faults.BadRequest: a bad body. :raises faults.Forbidden: too many items.
    """
    policy.authorized_server(req, state.db, rules.UPDATE_ALL, server_id)
    new = req.validated_body(schemas.METADATA_SET)["metadata"]
    metadata = _change(state, req, server_id, rules.UPDATE_ALL, lambda old: dict(new))
    return json_response({"metadata": metadata})


def show(state: "ApiState", req: ApiRequest, server_id: str, key: str) -> webob.Response:
    """``GET /servers/{server_id}/metadata/{key}``.

    :returns: ``{"meta": {key: value}}``, 200.
    :raises faults.NotFound: no such key (or server).
    """
    server = policy.authorized_server(req, state.db, rules.SHOW, server_id)
    return json_response({"meta": {key: _item(dict(server.metadata_items or {}), key)}})


def update(state: "ApiState", req: ApiRequest, server_id: str, key: str) -> webob.Response:
    """``PUT /servers/{server_id}/metadata/{key}``: set one pair; the body
    names the same key as the path.

    :returns: ``{"meta": {key: value}}``, 200.
    :raises faults.BadRequest: a bad body, or another key than the path's.
    """
    policy.authorized_server(req, state.db, rules.UPDATE, server_id)
    meta = req.validated_body(schemas.METADATA_ITEM)["meta"]
    if key not in meta:
        raise faults.BadRequest("Request body and URI mismatch")
    value = meta[key]
    _change(state, req, server_id, rules.UPDATE, lambda old: {**old, key: value})
    return json_response({"meta": {key: value}})


def delete(state: "ApiState", req: ApiRequest, server_id: str, key: str) -> webob.Response:
    """``DELETE /servers/{server_id}/metadata/{key}``.

    :returns: 204.
    :raises faults.NotFound: no such key (or server).
    """

    def without(old: dict[str, str]) -> dict[str, str]:
        _item(old, key)
        return {k: v for k, v in old.items() if k != key}

    _change(state, req, server_id, rules.DELETE, without)
    return empty_response(204)
