"""Host aggregates: ``/v2.1/os-aggregates``.

Nova's ``os-aggregates``: list, create, show, update (``name``,
``availability_zone``), delete, and the actions ``add_host``,
``remove_host`` and ``set_metadata``. An aggregate with the metadata key
``availability_zone`` makes a zone of its hosts (``os-availability-zone``).
Administrators only by default. ``uuid`` is shown from microversion 2.41.

A host added to or removed from an aggregate is first made a member of the
aggregate's uuid in Placement, or taken out (its compute node's root
provider; other aggregates it is in are kept), then recorded; if Placement
cannot be written the answer is 503 and nothing is changed. A host whose
provider does not exist yet is only recorded: ``resize-sched-manage
placement sync_aggregates`` puts it in Placement later
(:mod:`resize_sched.placement.aggregates`).

Status codes and messages are Nova's: a taken name 409; an unknown
aggregate, or host, 404; a host already in the aggregate 409; a host that
would be in two zones 409 on ``add_host``, 400 on ``update`` and
``set_metadata``; deleting an aggregate with hosts 400; a malformed body 400.
Every refusal changes nothing.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.handlers.services import PlacementUnavailable
from resize_sched.api.request import ApiRequest, json_response, nova_timestamp
from resize_sched.db import aggregate_api
from resize_sched.db.aggregate_api import AggregateView
from resize_sched.placement import aggregates as mirror
from resize_sched.policies import aggregates as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

# NOTE: as Nova's zone names: no ':' (the "zone:host" form of a create's
# availability_zone), no control characters, no leading or trailing blank.
ZONE_NAME = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": "^(?!\\s)[^:\\x00-\\x1f\\x7f-\\x9f]*(?<!\\s)\\Z",
}
_NULLABLE_ZONE = {"anyOf": [ZONE_NAME, {"type": "null"}]}
_HOST = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[^\\x00-\\x1f]*\\Z"}

_AGGREGATE = {"name": schemas.NAME, "availability_zone": _NULLABLE_ZONE}
CREATE_SCHEMA = schemas.body("aggregate", schemas.closed(_AGGREGATE, required=["name"]))
UPDATE_SCHEMA = schemas.body(
    "aggregate",
    schemas.closed(
        _AGGREGATE, anyOf=[{"required": ["name"]}, {"required": ["availability_zone"]}]
    ),
)
_HOST_ACTION = schemas.closed({"host": _HOST}, required=["host"])
# NOTE: the bounds before additionalProperties: the order in which
# jsonschema reports (and a 400 names) the first error.
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "add_host": _HOST_ACTION,
        "remove_host": _HOST_ACTION,
        "set_metadata": schemas.body(
            "metadata",
            schemas.key_value_map(
                "^[a-zA-Z0-9-_:. /]{1,255}\\Z", {"type": ["string", "null"], "maxLength": 255}
            ),
        ),
    },
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
}


def view(req: ApiRequest, aggregate: AggregateView, *, full: bool = True) -> dict[str, Any]:
    """An aggregate as Nova shows it (``full``: with hosts and metadata; a
    create's answer has neither, as Nova's)."""
    body: dict[str, Any] = {
        "availability_zone": aggregate.availability_zone,
        "created_at": nova_timestamp(aggregate.created_at),
        "deleted": False,
        "deleted_at": None,
        "id": aggregate.id,
        "name": aggregate.name,
        "updated_at": nova_timestamp(aggregate.updated_at),
    }
    if full:
        body["hosts"] = list(aggregate.hosts)
        body["metadata"] = dict(aggregate.metadata)
    if req.version.at_least("2.41"):
        body["uuid"] = aggregate.uuid
    return body


def _id(aggregate_id: str) -> int:
    """The aggregate id of the path; as Nova, one that names none (``-1``,
    ``abc``) is a 404, not a 400."""
    text = aggregate_id.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10 and int(text) < 2**31):
        raise exception.AggregateNotFound(aggregate_id=aggregate_id)
    return int(text)


def _refused(exc: exception.InvalidAggregateAction, status: int) -> faults.Fault:
    fault = faults.Fault(exc.message)
    fault.status = status
    return fault


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-aggregates``: every aggregate, with hosts and metadata.

    :returns: ``{"aggregates": [...]}``, 200.
    """
    policy.authorize(req, rules.INDEX)
    return json_response({"aggregates": [view(req, a) for a in state.db.aggregate_list()]})


def create(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``POST /os-aggregates``: ``{"aggregate": {"name", "availability_zone"}}``.

    :returns: ``{"aggregate": {...}}`` (no hosts, no metadata), 200 as Nova.
    :raises faults.Conflict: the name is taken.
    :raises faults.BadRequest: a malformed body.
    """
    policy.authorize(req, rules.CREATE)
    body = req.validated_body(CREATE_SCHEMA)["aggregate"]
    created = state.db.aggregate_create(body["name"], body.get("availability_zone"))
    return json_response({"aggregate": view(req, created, full=False)})


def show(state: "ApiState", req: ApiRequest, aggregate_id: str) -> webob.Response:
    """``GET /os-aggregates/{id}``.

    :raises faults.NotFound: no such aggregate.
    """
    policy.authorize(req, rules.SHOW)
    return json_response({"aggregate": view(req, state.db.aggregate_get(_id(aggregate_id)))})


def update(state: "ApiState", req: ApiRequest, aggregate_id: str) -> webob.Response:
    """``PUT /os-aggregates/{id}``: ``name`` and/or ``availability_zone``.

    :raises faults.NotFound: no such aggregate.
    :raises faults.Conflict: the name is another aggregate's.
    :raises faults.BadRequest: a malformed body, or a zone that would put
        a host in two zones or move servers' hosts to another zone.
    """
    policy.authorize(req, rules.UPDATE)
    ident = _id(aggregate_id)
    body = req.validated_body(UPDATE_SCHEMA)["aggregate"]
    zone = (
        {aggregate_api.ZONE_KEY: body["availability_zone"]} if "availability_zone" in body else {}
    )
    try:
        updated = state.db.aggregate_update(ident, name=body.get("name"), zone=zone)
    except exception.InvalidAggregateAction as exc:
        raise _refused(exc, 400) from None
    return json_response({"aggregate": view(req, updated)})


def delete(state: "ApiState", req: ApiRequest, aggregate_id: str) -> webob.Response:
    """``DELETE /os-aggregates/{id}`` (an aggregate with no host).

    :returns: an empty 200, as Nova.
    :raises faults.NotFound: no such aggregate.
    :raises faults.BadRequest: it has hosts.
    """
    policy.authorize(req, rules.DELETE)
    try:
        state.db.aggregate_delete(_id(aggregate_id))
    except exception.InvalidAggregateAction as exc:
        raise _refused(exc, 400) from None
    response = webob.Response(status=200)
    del response.content_type
    response.content_length = 0
    return response


def action(state: "ApiState", req: ApiRequest, aggregate_id: str) -> webob.Response:
    """``POST /os-aggregates/{id}/action``: ``add_host``, ``remove_host`` or
    ``set_metadata``.

    :returns: ``{"aggregate": {...}}``, 200.
    """
    ident = _id(aggregate_id)
    body = req.validated_body(ACTION_SCHEMA)
    if "add_host" in body:
        policy.authorize(req, rules.ADD_HOST)
        updated = _add_host(state, ident, body["add_host"]["host"])
    elif "remove_host" in body:
        policy.authorize(req, rules.REMOVE_HOST)
        updated = _remove_host(state, ident, body["remove_host"]["host"])
    else:
        policy.authorize(req, rules.SET_METADATA)
        try:
            updated = state.db.aggregate_set_metadata(ident, body["set_metadata"]["metadata"])
        except exception.InvalidAggregateAction as exc:
            raise _refused(exc, 400) from None
    return json_response({"aggregate": view(req, updated)})


def _placement_failed(host: str, exc: Exception) -> PlacementUnavailable:
    return PlacementUnavailable(
        f"Could not update the aggregates of {host}'s resource provider in Placement; "
        f"nothing was changed: {exc}"
    )


def _add_host(state: "ApiState", ident: int, host: str) -> AggregateView:
    try:
        current = state.db.aggregate_check_add_host(ident, host)
    except exception.InvalidAggregateAction as exc:
        raise _refused(exc, 409) from None
    client = state.placement()
    try:
        written = mirror.add_host(state.db, client, host, current.uuid)
    except exception.PlacementError as exc:
        raise _placement_failed(host, exc) from None
    try:
        updated = state.db.aggregate_add_host(ident, host)
    except Exception as exc:
        # NOTE: raced by another change since the check: take back what we
        # added, so that the refusal leaves Placement as it was.
        for rp in written:
            try:
                client.update_aggregates(rp, remove=[current.uuid])
            except exception.PlacementError:
                LOG.warning("Could not take %s back out of aggregate %s", rp, current.uuid)
        if isinstance(exc, exception.InvalidAggregateAction):
            raise _refused(exc, 409) from None
        raise
    if not state.db.compute_nodes_by_host(host):
        LOG.warning(
            "Host %s has no resource provider yet; it joins aggregate %s in Placement at "
            "'resize-sched-manage placement sync_aggregates'",
            host,
            current.uuid,
        )
    LOG.info("Host %s added to aggregate %s (%s)", host, ident, current.name)
    return updated


def _remove_host(state: "ApiState", ident: int, host: str) -> AggregateView:
    try:
        current = state.db.aggregate_check_remove_host(ident, host)
    except exception.NotFound:
        raise faults.NotFound(f"Cannot remove host {host} in aggregate {ident}") from None
    try:
        mirror.remove_host(state.db, state.placement(), host, current.uuid)
    except exception.PlacementError as exc:
        raise _placement_failed(host, exc) from None
    try:
        updated = state.db.aggregate_remove_host(ident, host)
    except exception.NotFound:
        raise faults.NotFound(f"Cannot remove host {host} in aggregate {ident}") from None
    LOG.info("Host %s removed from aggregate %s (%s)", host, ident, current.name)
    return updated
