"""The server document: one server's JSON in show, list and update answers.

What ``/servers`` (and every answer that carries a server) shows follows the
microversion for the changes that touch what we serve: 2.3 (admin extended
attributes), 2.9 ``locked``, 2.16 ``host_status``, 2.19 ``description``,
2.26 ``tags``, 2.47 (the flavor embedded instead of a link), 2.63
``trusted_image_certificates``, 2.71 ``server_groups`` (one server's, not in
``/servers/detail``, as Nova), 2.73 ``locked_reason``. Without networks,
locks or tags these carry empty values. ``OS-SRV-USG:launched_at`` is when
the server first became ACTIVE (Nova moves it to the end of each resize; we
keep the first launch, which ``os-simple-tenant-usage`` counts from),
``OS-SRV-USG:terminated_at`` when it was deleted,
``OS-EXT-AZ:availability_zone`` its host's zone (before it has one, the zone
asked at create), and ``host_status`` its host's compute service's state
(:func:`host_statuses`).

Nothing here writes: the handlers read what the document needs (host
statuses, zones) and hand it over.
"""

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from resize_sched.api import policy
from resize_sched.api.handlers.availability_zones import HostZones
from resize_sched.api.handlers.services import COMPUTE_ZONE
from resize_sched.api.request import ApiRequest, isotime, nova_timestamp
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, service_is_up
from resize_sched.policies import servers as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

#: The statuses whose servers show ``progress``, as Nova's.
_PROGRESS_STATUSES = (
    models.STATUS_ACTIVE,
    models.STATUS_BUILD,
    models.STATUS_RESIZE,
    models.STATUS_VERIFY_RESIZE,
)


def power_state(server: models.Server) -> int:
    """``OS-EXT-STS:power_state``: as the compute host set it, or, on rows from
    before it was kept, read from the vm_state."""
    if server.power_state is not None:
        return server.power_state
    if server.vm_state in (models.VM_ACTIVE, models.VM_RESIZED):
        return models.POWER_RUNNING
    if server.vm_state == models.VM_STOPPED:
        return models.POWER_SHUTDOWN
    return models.POWER_NOSTATE


def host_id(project_id: str | None, host: str | None) -> str:
    """Nova's ``hostId``: a hash of project and host, empty without a host
    (the same host is told apart per project, never named)."""
    if not host:
        return ""
    return hashlib.sha224(f"{project_id or ''}{host}".encode()).hexdigest()


def _flavor_view(req: ApiRequest, server: models.Server) -> dict[str, Any]:
    flavor = server.flavor
    if req.version.at_least("2.47"):
        body = {
            "original_name": flavor.get("name"),
            "vcpus": flavor["vcpus"],
            "ram": flavor["memory_mb"],
            "disk": flavor["root_gb"],
            "ephemeral": flavor.get("ephemeral_gb", 0),
            "swap": flavor.get("swap", 0),
        }
        if policy.allowed(req, rules.SHOW_FLAVOR_EXTRA_SPECS, policy.server_target(server)):
            body["extra_specs"] = dict(flavor.get("extra_specs") or {})
        return body
    flavorid = str(flavor["id"])
    return {
        "id": flavorid,
        "links": [{"rel": "bookmark", "href": req.bookmark("flavors", flavorid)}],
    }


def _image_view(req: ApiRequest, server: models.Server) -> dict[str, Any] | str:
    # NOTE: as Nova: "" for a server with no image (booted from a volume).
    if not server.image_ref:
        return ""
    return {
        "id": server.image_ref,
        "links": [{"rel": "bookmark", "href": req.bookmark("images", server.image_ref)}],
    }


def host_statuses(state: "ApiState", req: ApiRequest) -> dict[str, str]:
    """``host_status`` of every compute host, as Nova derives it from the host's service.

    ``DOWN`` when forced down, ``MAINTENANCE`` when disabled, ``UP`` while
    it reports, ``UNKNOWN`` when its reports stopped; a host with no service
    is absent (its servers show ``""``).

    :returns: host -> status; empty below 2.16 (nothing to show).
    """
    if not req.version.at_least("2.16"):
        return {}
    down_time = state.conf.service_down_time
    statuses = {}
    for service in state.db.service_list(binary=COMPUTE_BINARY):
        if service.forced_down:
            statuses[service.host] = "DOWN"
        elif service.disabled:
            statuses[service.host] = "MAINTENANCE"
        else:
            statuses[service.host] = "UP" if service_is_up(service, down_time) else "UNKNOWN"
    return statuses


def _admin_fields(
    req: ApiRequest, server: models.Server, statuses: Mapping[str, str]
) -> dict[str, Any]:
    target = policy.server_target(server)
    fields: dict[str, Any] = {}
    if req.version.at_least("2.16") and policy.allowed(req, rules.SHOW_HOST_STATUS, target):
        fields["host_status"] = statuses.get(server.host, "") if server.host else ""
    if not policy.allowed(req, rules.EXTENDED_ATTRIBUTES, target):
        return fields
    fields |= {
        "OS-EXT-SRV-ATTR:host": server.host,
        "OS-EXT-SRV-ATTR:hypervisor_hostname": server.node,
        "OS-EXT-SRV-ATTR:instance_name": f"instance-{server.uuid}",
    }
    if req.version.at_least("2.3"):
        fields.update(
            {
                "OS-EXT-SRV-ATTR:reservation_id": server.reservation_id or "",
                "OS-EXT-SRV-ATTR:launch_index": server.launch_index or 0,
                "OS-EXT-SRV-ATTR:hostname": server.name,
                "OS-EXT-SRV-ATTR:kernel_id": "",
                "OS-EXT-SRV-ATTR:ramdisk_id": "",
                "OS-EXT-SRV-ATTR:root_device_name": None,
                "OS-EXT-SRV-ATTR:user_data": None,
            }
        )
    return fields


def _versioned_fields(req: ApiRequest, server: models.Server, listed: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for version, key, value in (
        ("2.9", "locked", False),
        ("2.19", "description", server.description),
        ("2.26", "tags", []),
        ("2.63", "trusted_image_certificates", None),
        ("2.71", "server_groups", []),
        ("2.73", "locked_reason", None),
    ):
        # NOTE: as Nova, server_groups is shown for one server, not in lists.
        if req.version.at_least(version) and not (listed and key == "server_groups"):
            fields[key] = value
    return fields


def _zone_view(server: models.Server, zones: HostZones | None) -> str:
    """``OS-EXT-AZ:availability_zone``, as Nova's: the zone of the server's
    host now; before it has one, the zone it was asked into ("" for none)."""
    if not server.host:
        return server.availability_zone or ""
    if zones is not None:
        return zones.of(server.host)
    # NOTE: no zones read for this answer: the zone recorded when it was placed.
    return server.availability_zone or COMPUTE_ZONE


def view(
    req: ApiRequest,
    server: models.Server,
    *,
    detail: bool = True,
    statuses: Mapping[str, str] | None = None,
    listed: bool = False,
    updated: bool = False,
    zones: HostZones | None = None,
) -> dict[str, Any]:
    """A server as the Compute API shows it to this caller at this microversion.

    :param req: the request (caller, microversion, links).
    :param server: the server.
    :param detail: every field, or only id, name and links.
    :param statuses: :func:`host_statuses` (``host_status``).
    :param listed: in a list (``/servers/detail``), not shown alone.
    :param updated: the answer to ``PUT /servers/{id}``: below 2.75 Nova
        leaves out the extension fields (zone, config drive, key, usage
        times, states, volumes, the admin's and ``host_status``).
    :param zones: every host's zone (:class:`HostZones`); None: the zone
        recorded on the server.
    :returns: the body of one server.
    """
    body: dict[str, Any] = {
        "id": server.uuid,
        "name": server.name,
        "links": req.links("servers", server.uuid),
    }
    if not detail:
        return body
    body.update(
        {
            "status": server.status,
            "tenant_id": server.project_id,
            "user_id": server.user_id,
            "created": isotime(server.created_at),
            "updated": isotime(server.updated_at or server.created_at),
            "flavor": _flavor_view(req, server),
            "image": _image_view(req, server),
            "addresses": {},
            "metadata": dict(server.metadata_items or {}),
            "hostId": host_id(server.project_id, server.host),
            "accessIPv4": server.access_ip_v4 or "",
            "accessIPv6": server.access_ip_v6 or "",
            "OS-DCF:diskConfig": "MANUAL",
        }
    )
    if server.status in _PROGRESS_STATUSES:
        body["progress"] = 0
    if updated and not req.version.at_least("2.75"):
        body.update(_versioned_fields(req, server, listed))
        return _with_fault(body, server)
    body.update(
        {
            "key_name": server.key_name,
            "config_drive": "",
            "OS-EXT-STS:task_state": server.task_state,
            "OS-EXT-STS:vm_state": server.vm_state,
            "OS-EXT-STS:power_state": power_state(server),
            "OS-EXT-AZ:availability_zone": _zone_view(server, zones),
            "OS-SRV-USG:launched_at": nova_timestamp(server.launched_at),
            "OS-SRV-USG:terminated_at": nova_timestamp(server.deleted_at),
            "os-extended-volumes:volumes_attached": [],
            **_versioned_fields(req, server, listed),
        }
    )
    body.update(_admin_fields(req, server, statuses or {}))
    return _with_fault(body, server)


def _with_fault(body: dict[str, Any], server: models.Server) -> dict[str, Any]:
    if server.status == models.STATUS_ERROR and server.fault_message:
        body["fault"] = {
            "code": server.fault_code or 500,
            "message": server.fault_message,
            "created": isotime(server.fault_at or server.updated_at or server.created_at),
        }
    return body
