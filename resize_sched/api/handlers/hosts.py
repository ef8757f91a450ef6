"""Hosts: ``/v2.1/os-hosts`` (up to microversion 2.42; 404 from 2.43, as Nova).

Nova's deprecated view of the hosts its services run on, which older
clients and scripts still read (``nova host-list``, ``host-describe``):

* ``GET /os-hosts`` (``?zone=``): every service as ``host_name``,
  ``service`` (``compute`` or ``conductor``) and ``zone`` (the zone
  ``os-services`` shows it in).
* ``GET /os-hosts/{host}``: a compute host's sizes as Nova shows them, one
  ``resource`` each: ``(total)`` (the inventory it last reported),
  ``(used_now)`` (Placement's usages with the reserved amounts, as
  ``os-hypervisors`` counts them), ``(used_max)`` (the flavors of its
  servers) and one per project of its servers.
* ``PUT /os-hosts/{host}``: ``status`` enables or disables the host's
  compute service exactly as ``os-services`` does (Placement trait first);
  ``maintenance_mode`` is a 501, the fake driver has no maintenance mode.
* ``GET /os-hosts/{host}/startup|shutdown|reboot``: a 501 for a compute
  host, the fake driver cannot power a host.

A host that runs no compute service is a 404 for all but the list.
Administrators only by default.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults, policy
from resize_sched.api.handlers import hypervisors
from resize_sched.api.handlers.hypervisors import NotImplementedFault, Usage
from resize_sched.api.handlers.services import (
    COMPUTE_ZONE,
    INTERNAL_ZONE,
    set_service_disabled,
)
from resize_sched.api.request import ApiRequest, json_response
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, CONDUCTOR_BINARY
from resize_sched.policies import hosts as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The last microversion that serves os-hosts.
LAST_VERSION = "2.42"

#: Our binaries -> the service (topic) Nova's os-hosts names.
SERVICE_TOPICS = {COMPUTE_BINARY: "compute", CONDUCTOR_BINARY: "conductor"}

_SWITCH = {
    "type": "string",
    "enum": ["enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE"],
}

#: ``PUT /os-hosts/{host}``: Nova's body, one of the two keys at least.
HOST_UPDATE = {
    "type": "object",
    "properties": {"status": _SWITCH, "maintenance_mode": _SWITCH},
    "anyOf": [{"required": ["status"]}, {"required": ["maintenance_mode"]}],
    "additionalProperties": False,
}


def _served(req: ApiRequest, rule: str) -> None:
    if req.version.at_least("2.43"):
        raise faults.NotFound("The resource could not be found.")
    policy.authorize(req, rule)


def _compute_service(state: "ApiState", host: str) -> models.Service:
    try:
        return state.db.service_get_by_host(host, COMPUTE_BINARY)
    except exception.NotFound:
        raise faults.NotFound(f"Compute host {host} could not be found.") from None


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-hosts``: every host's services; ``zone`` keeps those of one zone.

    :returns: ``{"hosts": [{"host_name", "service", "zone"}, ...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hosts:list`` refuses.
    """
    _served(req, rules.LIST)
    zone = req.GET.get("zone")
    found = []
    for service in state.db.service_list():
        shown = {
            "host_name": service.host,
            "service": SERVICE_TOPICS.get(service.binary, service.binary),
            "zone": COMPUTE_ZONE if service.binary == COMPUTE_BINARY else INTERNAL_ZONE,
        }
        # NOTE: as Nova, an empty zone filters nothing.
        if not zone or shown["zone"] == zone:
            found.append(shown)
    return json_response({"hosts": found})


def _flavor_sizes(servers: Iterable[models.Server]) -> dict[str, int]:
    cpu = memory = disk = 0
    for server in servers:
        cpu += int(server.flavor["vcpus"])
        memory += int(server.flavor["memory_mb"])
        disk += int(server.flavor["root_gb"]) + int(server.flavor.get("ephemeral_gb") or 0)
    return {"cpu": cpu, "memory_mb": memory, "disk_gb": disk}


def show(state: "ApiState", req: ApiRequest, host_name: str) -> webob.Response:
    """``GET /os-hosts/{host}``: a compute host's totals, usage and servers' sizes.

    :returns: ``{"host": [{"resource": {...}}, ...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-hosts:show`` refuses.
    :raises faults.NotFound: no compute service on that host.
    :raises PlacementUnavailable: the usages could not be read.
    """
    _served(req, rules.SHOW)
    _compute_service(state, host_name)
    nodes = [n for n in state.db.compute_node_list() if n.host == host_name]
    servers = state.db.server_list(host=host_name)
    usages = hypervisors.owned_usages(state, nodes)
    total = {"cpu": 0, "memory_mb": 0, "disk_gb": 0}
    used_now = dict(total)
    for node in nodes:
        usage = usages.get(node.uuid) or Usage({}, [])
        sized = hypervisors.sizes(node, usage.root, [], usage.children)
        for key, size, used in (
            ("cpu", "vcpus", "vcpus_used"),
            ("memory_mb", "memory_mb", "memory_mb_used"),
            ("disk_gb", "local_gb", "local_gb_used"),
        ):
            total[key] += sized[size]
            used_now[key] += sized[used]
    rows: list[tuple[str, dict[str, int]]] = [
        ("(total)", total),
        ("(used_now)", used_now),
        ("(used_max)", _flavor_sizes(servers)),
    ]
    for project in sorted({s.project_id for s in servers}):
        rows.append((project, _flavor_sizes(s for s in servers if s.project_id == project)))
    body: list[dict[str, Any]] = [
        {"resource": {"host": host_name, "project": project, **amounts}}
        for project, amounts in rows
    ]
    return json_response({"host": body})


def update(state: "ApiState", req: ApiRequest, host_name: str) -> webob.Response:
    """``PUT /os-hosts/{host}``: enable or disable its compute service.

    :returns: ``{"host": host, "status": "enabled" | "disabled"}``, 200.
    :raises faults.BadRequest: a bad body.
    :raises faults.NotFound: no compute service on that host.
    :raises NotImplementedFault: ``maintenance_mode`` (nothing is changed).
    """
    _served(req, rules.UPDATE)
    body = req.validated_body(HOST_UPDATE)
    service = _compute_service(state, host_name)
    if "maintenance_mode" in body:
        raise NotImplementedFault("Virt driver does not implement host maintenance mode.")
    disabled = body["status"].lower() == "disable"
    set_service_disabled(state, service, disabled, None)
    return json_response({"host": host_name, "status": "disabled" if disabled else "enabled"})


def _power(state: "ApiState", req: ApiRequest, host_name: str, rule: str) -> webob.Response:
    _served(req, rule)
    _compute_service(state, host_name)
    raise NotImplementedFault("Virt driver does not implement host power management.")


def startup(state: "ApiState", req: ApiRequest, host_name: str) -> webob.Response:
    """``GET /os-hosts/{host}/startup``: 501 for a compute host (see the module doc)."""
    return _power(state, req, host_name, rules.START)


def shutdown(state: "ApiState", req: ApiRequest, host_name: str) -> webob.Response:
    """``GET /os-hosts/{host}/shutdown``: 501 for a compute host."""
    return _power(state, req, host_name, rules.SHUTDOWN)


def reboot(state: "ApiState", req: ApiRequest, host_name: str) -> webob.Response:
    """``GET /os-hosts/{host}/reboot``: 501 for a compute host."""
    return _power(state, req, host_name, rules.REBOOT)
