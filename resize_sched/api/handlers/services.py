"""Services: ``GET /v2.1/os-services``, ``PUT /v2.1/os-services/{id}``.

Nova's ``os-services`` for the services we record: compute services (in
their host's availability zone, see
:mod:`resize_sched.api.handlers.availability_zones`), whose rows the
conductor writes from their periodic reports, and conductors (zone
``internal``), which write their own. ``state`` is ``up`` while the last
report is at most ``[DEFAULT] service_down_time`` seconds old (and the
service is not forced down); ``status`` is ``disabled`` or ``enabled``.

Names: a service is listed under Nova's name for it (``nova-compute``,
``nova-conductor``: :data:`NOVA_BINARIES`), so that scripts written for
Nova find it; on input (the ``binary`` filter, the pre-2.53 actions' body)
Nova's name and our own (``resize-sched-compute``, ``resize-sched-conductor``)
both name it. The database keeps our names.

Disabling a service (from 2.53 ``PUT /os-services/{service_uuid}`` with
``{"status": "disabled", "disabled_reason": ...}``; before 2.53 ``PUT
/os-services/disable`` or ``disable-log-reason`` with ``host`` and
``binary``) first sets ``COMPUTE_STATUS_DISABLED`` on the host's provider in
Placement, as Nova does, so no new build or resize lands there; then records
it on the service. Enabling clears both. Both are safe to repeat; a host
with no provider of ours yet is only recorded (its provider gets the trait
when it registers, see :mod:`resize_sched.conductor.reports`).

Forcing a compute service down (so its servers may be evacuated at once,
without waiting for ``service_down_time``): from 2.11 ``PUT
/os-services/force-down`` with ``host``, ``binary`` and ``forced_down``, from
2.53 ``forced_down`` in the body of ``PUT /os-services/{service_uuid}``.

Fields follow the microversion: ``forced_down`` from 2.11, uuid ``id`` from
2.53 (an integer before). Administrators only by default.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging
from oslo_utils import uuidutils

from resize_sched import exception
from resize_sched.api import faults, policy
from resize_sched.api.request import ApiRequest, json_response, nova_timestamp
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, CONDUCTOR_BINARY, service_is_up
from resize_sched.placement.client import owner_trait
from resize_sched.policies import services as rules
from resize_sched.scheduler import hosts

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The availability zone compute services show (Nova's default zone).
COMPUTE_ZONE = "nova"
#: The zone Nova shows its other services in.
INTERNAL_ZONE = "internal"

#: Our binary names -> the names os-services shows (Nova's).
NOVA_BINARIES = {COMPUTE_BINARY: "nova-compute", CONDUCTOR_BINARY: "nova-conductor"}
_OUR_BINARIES = {nova: ours for ours, nova in NOVA_BINARIES.items()}


def shown_binary(binary: str) -> str:
    """The name os-services shows a service's binary under (Nova's, when it has one).

    :param binary: the binary as recorded (ours).
    """
    return NOVA_BINARIES.get(binary, binary)


def recorded_binary(name: str) -> str:
    """The binary a name given on input means: ours for Nova's, else as given.

    :param name: ``nova-compute``, ``resize-sched-compute``...
    """
    return _OUR_BINARIES.get(name, name)


_REASON = {"type": "string", "minLength": 1, "maxLength": 255}
_HOST_BINARY = {
    "host": {"type": "string", "minLength": 1, "maxLength": 255},
    "binary": {"type": "string", "minLength": 1, "maxLength": 255},
}

UPDATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["enabled", "disabled"]},
        "disabled_reason": _REASON,
        "forced_down": {"type": "boolean"},
    },
    "additionalProperties": False,
}
LEGACY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": dict(_HOST_BINARY),
    "required": ["host", "binary"],
    "additionalProperties": False,
}
LEGACY_REASON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {**_HOST_BINARY, "disabled_reason": _REASON},
    "required": ["host", "binary", "disabled_reason"],
    "additionalProperties": False,
}


class PlacementUnavailable(faults.Fault):
    """503: Placement could not be updated; nothing was changed."""

    status = 503


def view(
    req: ApiRequest,
    service: models.Service,
    down_time: float,
    zones: tuple[dict[str, str], str] | None = None,
) -> dict[str, Any]:
    """A service as os-services shows it at this microversion.

    :param req: the request (for the microversion).
    :param service: the service row.
    :param down_time: ``[DEFAULT] service_down_time``.
    :param zones: (host -> zone of the hosts in a zone aggregate, the
        default zone); None: every compute host in the default zone.
    :returns: the body of one service.
    """
    zone = INTERNAL_ZONE
    if service.binary == COMPUTE_BINARY:
        zone = zones[0].get(service.host, zones[1]) if zones is not None else COMPUTE_ZONE
    body: dict[str, Any] = {
        "id": service.uuid if req.version.at_least("2.53") else service.id,
        "binary": shown_binary(service.binary),
        "host": service.host,
        "zone": zone,
        "status": "disabled" if service.disabled else "enabled",
        "state": "up" if service_is_up(service, down_time) else "down",
        "updated_at": nova_timestamp(service.updated_at),
        "disabled_reason": service.disabled_reason,
    }
    if req.version.at_least("2.11"):
        body["forced_down"] = service.forced_down
    return body


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-services``: every service (``host``, ``binary`` filter them).

    :returns: ``{"services": [...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-services:list`` refuses.
    """
    policy.authorize(req, rules.LIST)
    binary = req.GET.get("binary")
    found = state.db.service_list(
        binary=recorded_binary(binary) if binary is not None else None, host=req.GET.get("host")
    )
    down_time = state.conf.service_down_time
    zones = _zones(state)
    return json_response({"services": [view(req, s, down_time, zones) for s in found]})


def _zones(state: "ApiState") -> tuple[dict[str, str], str]:
    """Every compute host's zone: its aggregates', else the default zone."""
    return state.db.host_zones(), state.conf.default_availability_zone


def set_service_disabled(
    state: "ApiState", service: models.Service, disabled: bool, reason: str | None
) -> models.Service:
    """Set the host's provider trait, then the service's flag (see the module doc)."""
    if service.binary != COMPUTE_BINARY:
        raise faults.BadRequest(
            f"Updating a {shown_binary(service.binary)} service is not supported. Only "
            f"{shown_binary(COMPUTE_BINARY)} services can be updated."
        )
    owner = owner_trait(state.conf.placement.deployment_name)
    try:
        hosts.set_disabled(state.placement(), owner, service.host, disabled)
    except exception.NotFound:
        LOG.warning(
            "Host %s has no resource provider of ours; its service is %s in the database only",
            service.host,
            "disabled" if disabled else "enabled",
        )
    except exception.PlacementError as exc:
        raise PlacementUnavailable(
            f"Could not update the resource provider of {service.host} in Placement; "
            f"nothing was changed: {exc}"
        ) from None
    updated = state.db.service_set_disabled(service.uuid, disabled, reason)
    LOG.info(
        "Service %s on %s %s%s",
        service.binary,
        service.host,
        "disabled" if disabled else "enabled",
        f" ({reason})" if disabled and reason else "",
    )
    return updated


def update(state: "ApiState", req: ApiRequest, service_id: str) -> webob.Response:
    """``PUT /os-services/{service_uuid}`` (2.53+): status, reason, forced_down.

    :returns: ``{"service": {...}}``, 200.
    :raises faults.NotFound: before 2.53, or no such service.
    :raises faults.BadRequest: not a uuid, an invalid body, a reason without
        ``"status": "disabled"``, or a service that is not a compute service.
    :raises faults.Forbidden: ``os_compute_api:os-services:update`` refuses.
    """
    if not req.version.at_least("2.53"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rules.UPDATE)
    if not uuidutils.is_uuid_like(service_id):
        raise faults.BadRequest(f"Invalid uuid {service_id}")
    body = req.validated_body(UPDATE_SCHEMA)
    if not body:
        raise faults.BadRequest("At least one of status or forced_down must be specified.")
    status = body.get("status")
    if "disabled_reason" in body and status != "disabled":
        raise faults.BadRequest(
            "Specifying 'disabled_reason' with status other than 'disabled' is invalid."
        )
    try:
        service = state.db.service_get(service_id)
    except exception.NotFound:
        raise faults.NotFound(f"Service {service_id} could not be found.") from None
    if status is not None:
        service = set_service_disabled(
            state, service, status == "disabled", body.get("disabled_reason")
        )
    if "forced_down" in body:
        if service.binary != COMPUTE_BINARY:
            raise faults.BadRequest(
                f"Only {shown_binary(COMPUTE_BINARY)} services can be forced down."
            )
        service = state.db.service_set_forced_down(service.uuid, body["forced_down"])
    return json_response(
        {"service": view(req, service, state.conf.service_down_time, _zones(state))}
    )


def _legacy(state: "ApiState", req: ApiRequest, disabled: bool, schema: dict) -> webob.Response:
    """The pre-2.53 actions: the service named by ``host`` and ``binary``."""
    if req.version.at_least("2.53"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rules.UPDATE)
    body = req.validated_body(schema)
    try:
        service = state.db.service_get_by_host(body["host"], recorded_binary(body["binary"]))
    except exception.NotFound:
        raise faults.NotFound(
            f"Service {body['binary']} on host {body['host']} could not be found."
        ) from None
    reason = body.get("disabled_reason") if disabled else None
    service = set_service_disabled(state, service, disabled, reason)
    # NOTE: the binary as the caller named it, as Nova answers.
    answer: dict[str, Any] = {
        "host": service.host,
        "binary": body["binary"],
        "status": "disabled" if service.disabled else "enabled",
    }
    if "disabled_reason" in body:
        answer["disabled_reason"] = service.disabled_reason
    return json_response({"service": answer})


FORCE_DOWN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {**_HOST_BINARY, "forced_down": {"type": "boolean"}},
    "required": ["host", "binary", "forced_down"],
    "additionalProperties": False,
}


def force_down(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``PUT /os-services/force-down`` (2.11 to 2.52): ``{"host", "binary", "forced_down"}``.

    :returns: ``{"service": {"host", "binary", "forced_down"}}``, 200.
    :raises faults.NotFound: outside 2.11-2.52, or no such service.
    :raises faults.BadRequest: a bad body, or not a compute service.
    """
    if not req.version.at_least("2.11") or req.version.at_least("2.53"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rules.UPDATE)
    body = req.validated_body(FORCE_DOWN_SCHEMA)
    binary = recorded_binary(body["binary"])
    if binary != COMPUTE_BINARY:
        raise faults.BadRequest(
            f"Only {shown_binary(COMPUTE_BINARY)} services can be forced down."
        )
    try:
        service = state.db.service_get_by_host(body["host"], binary)
    except exception.NotFound:
        raise faults.NotFound(
            f"Service {body['binary']} on host {body['host']} could not be found."
        ) from None
    service = state.db.service_set_forced_down(service.uuid, body["forced_down"])
    return json_response(
        {
            "service": {
                "host": service.host,
                "binary": body["binary"],
                "forced_down": service.forced_down,
            }
        }
    )


def disable(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``PUT /os-services/disable`` (before 2.53): ``{"host", "binary"}``.

    :returns: ``{"service": {"host", "binary", "status"}}``, 200.
    """
    return _legacy(state, req, True, LEGACY_SCHEMA)


def disable_log_reason(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``PUT /os-services/disable-log-reason`` (before 2.53), with ``disabled_reason``.

    :returns: ``{"service": {"host", "binary", "status", "disabled_reason"}}``, 200.
    """
    return _legacy(state, req, True, LEGACY_REASON_SCHEMA)


def enable(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``PUT /os-services/enable`` (before 2.53): ``{"host", "binary"}``.

    :returns: ``{"service": {"host", "binary", "status"}}``, 200.
    """
    return _legacy(state, req, False, LEGACY_SCHEMA)
