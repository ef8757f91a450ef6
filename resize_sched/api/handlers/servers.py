"""Servers: ``/v2.1/servers``.

Create records the server in BUILD and casts ``build_server`` to the
conductor; delete marks it ``deleting`` and casts ``delete_server``. A
project sees only its own servers: another project's server is a 404, as an
unknown one. An administrator may show or delete any server, and lists every
project's with ``all_tenants`` (as in Nova; without it, only its own).

Bodies follow the microversion for the changes that touch what we serve:
2.3 (admin extended attributes), 2.9 ``locked``, 2.16 ``host_status``,
2.19 ``description``, 2.26 ``tags``, 2.47 (the flavor embedded instead of a
link), 2.63 ``trusted_image_certificates``, 2.71 ``server_groups`` (one
server's, not in ``/servers/detail``, as Nova), 2.73
``locked_reason``. Without networks, locks or tags these carry empty
values. ``OS-SRV-USG:launched_at`` is when the server first became ACTIVE
(Nova moves it to the end of each resize; we keep the first launch, which
``os-simple-tenant-usage`` counts from), ``OS-SRV-USG:terminated_at`` when it
was deleted, ``OS-EXT-AZ:availability_zone`` its host's zone (before it has
one, the zone asked at create: ``availability_zone``, else ``[DEFAULT]
default_schedule_zone``; an unknown zone is a 400), and
``host_status`` its host's compute service's state (:func:`host_statuses`).
``imageRef`` is recorded (and checked against the Image service when
``[glance]`` is configured, :mod:`resize_sched.api.glance`); block device
mappings are refused.
"""

import hashlib
import ipaddress
import secrets
import uuid as uuidlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception, quota
from resize_sched.api import faults, glance, policy, schemas
from resize_sched.api.handlers import availability_zones, server_groups
from resize_sched.api.handlers.availability_zones import HostZones
from resize_sched.api.handlers.flavors import visible_flavor
from resize_sched.api.handlers.services import COMPUTE_ZONE
from resize_sched.api.name_filter import NameFilter
from resize_sched.api.request import (
    ApiRequest,
    empty_response,
    isotime,
    json_response,
    nova_timestamp,
    paginate,
    parse_bool,
)
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY, service_is_up
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.policies import servers as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The statuses whose servers show ``progress``, as Nova's.
_PROGRESS_STATUSES = (
    models.STATUS_ACTIVE,
    models.STATUS_BUILD,
    models.STATUS_RESIZE,
    models.STATUS_VERIFY_RESIZE,
)

#: The length of a generated ``adminPass`` (Nova's default).
PASSWORD_LENGTH = 12


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


def flavor_ref(value: int | str) -> str:
    """The flavor id in a ``flavorRef``: an id, or a URL ending in one.

    :param value: the ``flavorRef`` as sent.
    :returns: the flavor id.
    """
    return str(value).rstrip("/").rsplit("/", 1)[-1]


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
    host_id = ""
    if server.host:
        host_id = hashlib.sha224(f"{server.project_id}{server.host}".encode()).hexdigest()
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
            "hostId": host_id,
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


def _listed(
    state: "ApiState", req: ApiRequest, *, detail: bool
) -> tuple[list[models.Server], list[dict[str, str]]]:
    ctxt = req.context
    policy.authorize(req, rules.DETAIL if detail else rules.INDEX)
    project_id: ProjectScope | None = ctxt.project_id
    # NOTE: as Nova, all_tenants present with no value means true.
    all_tenants = req.GET.get("all_tenants")
    if all_tenants is not None and (not all_tenants or parse_bool(all_tenants, "all_tenants")):
        policy.authorize(req, rules.DETAIL_ALL_TENANTS if detail else rules.INDEX_ALL_TENANTS)
        project_id = req.GET.get("project_id") or req.GET.get("tenant_id") or ALL_PROJECTS
    host = req.GET.get("host")
    if host is not None:
        policy.authorize(req, rules.ALLOW_ALL_FILTERS)
    servers = state.db.server_list(
        project_id, host=host, reservation_id=req.GET.get("reservation_id") or None
    )
    statuses = {s.upper() for s in req.GET.getall("status")}
    if statuses:
        servers = [s for s in servers if s.status in statuses]
    if "flavor" in req.GET:
        servers = [s for s in servers if str(s.flavor.get("id")) == req.GET["flavor"]]
    if "image" in req.GET:
        servers = [s for s in servers if s.image_ref == req.GET["image"]]
    name = req.GET.get("name")
    if name:
        pattern = NameFilter(name)
        servers = [s for s in servers if pattern.matches(s.name)]
    # NOTE: newest first, as Nova lists them.
    servers.reverse()
    return paginate(req, servers, "uuid", "servers")


def _list_response(
    state: "ApiState", req: ApiRequest, servers: list[Any], links: list[Any], detail: bool
) -> Any:
    statuses = host_statuses(state, req) if detail and servers else {}
    zones = HostZones.read(state) if detail and servers else None
    body: dict[str, Any] = {
        "servers": [
            view(req, s, detail=detail, statuses=statuses, listed=True, zones=zones)
            for s in servers
        ]
    }
    if links:
        body["servers_links"] = links
    return json_response(body)


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /servers``: id, name and links of the caller's servers.

    Filters: ``name`` (a regular expression, run by
    :mod:`resize_sched.api.name_filter`), ``status``, ``flavor``, ``image``
    (an image id), ``reservation_id`` (the servers of one create); for an
    administrator also ``all_tenants`` (present with no value: true, as in
    Nova; with ``project_id``) and ``host``.

    :returns: ``{"servers": [...]}``, 200, newest first.
    :raises faults.Forbidden: an admin-only filter from a non-admin.
    :raises faults.BadRequest: a bad filter or marker.
    """
    servers, links = _listed(state, req, detail=False)
    return _list_response(state, req, servers, links, detail=False)


def detail(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /servers/detail``: every field of the caller's servers.

    :returns: ``{"servers": [...]}``, 200, newest first.
    :raises faults.Forbidden: an admin-only filter from a non-admin.
    :raises faults.BadRequest: a bad filter or marker.
    """
    servers, links = _listed(state, req, detail=True)
    return _list_response(state, req, servers, links, detail=True)


def show(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``GET /servers/{server_id}``.

    :returns: ``{"server": {...}}``, 200.
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:servers:show`` refuses.
    """
    server = policy.authorized_server(req, state.db, rules.SHOW, server_id)
    body = view(req, server, statuses=host_statuses(state, req), zones=HostZones.read(state))
    if "server_groups" in body:
        group = state.db.group_of_server(server.uuid)
        body["server_groups"] = [group.uuid] if group is not None else []
    return json_response({"server": body})


def create(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``POST /servers``: record one server or more in BUILD and ask the
    conductor to build each.

    Multiple create, as Nova's: ``max_count`` servers when the quota
    allows, else as many as it allows down to ``min_count`` (both default
    to 1; ``max_count`` to ``min_count``), else 403 with nothing created.
    Every server of the request shares one reservation id, and each is
    built on its own (its group, zone and hints apply to each). With more
    than one, each is named from ``[DEFAULT] multi_instance_display_name_template``.

    :returns: ``{"server": {"id", "links", "OS-DCF:diskConfig"}}`` (the
        first server's), 202, with a ``Location`` header; with
        ``return_reservation_id`` true, ``{"reservation_id": "r-..."}``, 202.
    :raises faults.Forbidden: ``os_compute_api:servers:create`` refuses, or
        not even ``min_count`` servers fit the quota.
    :raises faults.BadRequest: a bad body (``min_count`` above
        ``max_count``), or a flavor the caller cannot use.
    """
    ctxt = req.context
    policy.authorize(req, rules.CREATE)
    whole = req.validated_body(schemas.SERVER_CREATE)
    body = whole["server"]
    min_count = schemas.as_int(body.get("min_count", 1), "min_count")
    max_count = schemas.as_int(body.get("max_count", min_count), "max_count")
    if min_count > max_count:
        raise faults.BadRequest("min_count must be <= max_count")
    hints = dict(whole.get("os:scheduler_hints") or whole.get("OS-SCH-HNT:scheduler_hints") or {})
    metadata = body.get("metadata") or {}
    check_metadata_quota(state, ctxt, metadata)
    image_ref = glance.image_ref_of(body)
    flavorid = flavor_ref(body["flavorRef"])
    zone = _asked_zone(state, body.get("availability_zone"))
    key_name = body.get("key_name")
    if key_name is not None:
        try:
            state.db.keypair_get(ctxt.user_id, key_name)
        except exception.KeyPairNotFound:
            raise faults.BadRequest("Invalid key_name provided.") from None
    reservation_id = _reservation_id()
    try:
        flavor = visible_flavor(req, state.db, flavorid)
        count = _count_that_fits(state, ctxt, flavor, min_count, max_count)
        group_uuid = server_groups.requested_group(state, req, hints, count)
        if image_ref is not None:
            image_ref = glance.validated_image(
                state.conf, image_ref, flavor.memory_mb, flavor.root_gb
            )
        servers = _record_servers(
            state,
            req,
            count,
            min_count,
            name=body["name"],
            flavorid=flavorid,
            project_id=ctxt.project_id,
            user_id=ctxt.user_id,
            image_ref=image_ref,
            context=ctxt,
            attributes={
                "access_ip_v4": body.get("accessIPv4"),
                "access_ip_v6": canonical_ipv6(body.get("accessIPv6")),
                "metadata_items": metadata or None,
                "key_name": key_name,
                "reservation_id": reservation_id,
            },
            availability_zone=zone,
            quota_conf=state.conf,
            scheduler_hints=hints or None,
            group_uuid=group_uuid,
        )
    except exception.FlavorNotFound:
        raise faults.BadRequest(f"Flavor {flavorid} could not be found.") from None
    except exception.ServerGroupNotFound as exc:
        raise faults.BadRequest(exc.message) from None
    for server in servers:
        state.conductor.build_server(ctxt, server.uuid)
        LOG.info(
            "Server %s created by %s/%s (reservation %s)",
            server.uuid,
            ctxt.user_id,
            ctxt.project_id,
            reservation_id,
        )
    if schemas.as_bool(body.get("return_reservation_id", False)):
        return json_response({"reservation_id": reservation_id}, status=202)
    first = servers[0]
    created: dict[str, Any] = {
        "id": first.uuid,
        "links": req.links("servers", first.uuid),
        "OS-DCF:diskConfig": "MANUAL",
    }
    # NOTE: as Nova, never stored: there is no guest to give it to.
    if state.conf.api.enable_instance_password:
        created["adminPass"] = body.get("adminPass") or _generate_password()
    response = json_response({"server": created}, status=202)
    response.location = req.link("servers", first.uuid)
    return response


def _reservation_id() -> str:
    """A new reservation id: ``r-`` and eight random lowercase letters or
    digits, the shape of Nova's."""
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
    return "r-" + "".join(secrets.choice(alphabet) for _ in range(8))


def _count_that_fits(
    state: "ApiState", ctxt: Any, flavor: Any, min_count: int, max_count: int
) -> int:
    """How many servers the request makes (:func:`quota.servers_that_fit`).

    :raises faults.Forbidden: not even ``min_count`` fit: Nova's message,
        the instances asked written ``min-max`` when they differ.
    """
    if max_count == 1:
        # NOTE: one server: create_server's own check and recheck suffice.
        return 1
    deltas = quota.flavor_deltas(flavor)
    try:
        return quota.servers_that_fit(
            state.db, state.conf, ctxt.project_id, ctxt.user_id, deltas, min_count, max_count
        )
    except exception.OverQuota as exc:
        found = exc.kwargs
        resource = found["resource"]
        requested: int | str = deltas.get(resource, 0) * max_count
        if resource == "instances":
            requested = str(min_count) if min_count == max_count else f"{min_count}-{max_count}"
        raise faults.Forbidden(
            faults.over_quota_message(resource, requested, found["used"], found["limit"])
        ) from None


def _display_name(template: str, name: str, uuid: str, index: int, count: int) -> str:
    """The name of the ``index``-th (from 0) of ``count`` servers, as Nova's:
    the name asked when alone, else the template filled in (the name asked
    when the template does not format)."""
    if count == 1:
        return name
    try:
        return template % {"name": name, "uuid": uuid, "count": index + 1}
    except (KeyError, TypeError, ValueError):
        LOG.warning("multi_instance_display_name_template %r does not format", template)
        return name


def _record_servers(
    state: "ApiState", req: ApiRequest, count: int, min_count: int, **create: Any
) -> list[models.Server]:
    """Record ``count`` servers through :func:`actions.create_server` (each
    checked and rechecked against the quota), none cast yet.

    When a racing create takes the quota between the count and a later
    server's recheck, the servers already recorded stay if there are at
    least ``min_count``; otherwise they are deleted through the ordinary
    delete (they were never cast) and the refusal is raised.
    """
    servers: list[models.Server] = []
    template = state.conf.multi_instance_display_name_template
    name = create.pop("name")
    attributes = create.pop("attributes")
    try:
        for index in range(count):
            uuid = str(uuidlib.uuid4())
            servers.append(
                actions.create_server(
                    state.db,
                    name=_display_name(template, name, uuid, index, count),
                    uuid=uuid,
                    attributes={**attributes, "launch_index": index},
                    **create,
                )
            )
    except exception.OverQuota:
        if servers and len(servers) >= min_count:
            LOG.info(
                "Reservation %s: %d of %d servers recorded before a racing create took the quota",
                attributes["reservation_id"],
                len(servers),
                count,
            )
            return servers
        _withdraw(state, req, servers)
        raise
    except Exception:
        _withdraw(state, req, servers)
        raise
    return servers


def _withdraw(state: "ApiState", req: ApiRequest, servers: list[models.Server]) -> None:
    for server in servers:
        actions.begin_delete(state.db, server.uuid, req.project_scope(), context=req.context)
        state.conductor.delete_server(req.context, server.uuid)
        LOG.info("Server %s withdrawn: its multiple create failed", server.uuid)


def _asked_zone(state: "ApiState", asked: str | None) -> str | None:
    """The zone a new server must be placed in: the one asked, else
    ``[DEFAULT] default_schedule_zone`` (None: any host).

    :raises faults.BadRequest: a zone no enabled compute host is in, or the
        ``zone:host`` form (forcing a host is not served here).
    """
    zone = asked or state.conf.default_schedule_zone
    if zone is None:
        return None
    if ":" in zone:
        raise faults.BadRequest(
            f"Invalid availability_zone {zone!r}: forcing a host ('zone:host') is not "
            "supported; name a zone."
        )
    if zone not in availability_zones.available_zones(state):
        raise faults.BadRequest("The requested availability zone is not available")
    return zone


def check_metadata_quota(state: "ApiState", owner: Any, metadata: Mapping[str, str]) -> None:
    """Refuse more metadata items than a server may have (403, as Nova).

    :param owner: what names the project and user whose ``metadata_items``
        quota applies (the request's context, or the server).
    """
    try:
        quota.enforce(
            state.db,
            state.conf,
            owner.project_id,
            owner.user_id,
            {"metadata_items": len(metadata)},
            {"metadata_items": 0},
        )
    except exception.OverQuota as exc:
        allowed = exc.kwargs["limit"]
        raise faults.Forbidden(f"Maximum number of metadata items exceeds {allowed}") from None


def _generate_password() -> str:
    # NOTE: Nova's alphabet: no look-alike letters or digits.
    alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    return "".join(secrets.choice(alphabet) for _ in range(PASSWORD_LENGTH))


def update(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``PUT /servers/{server_id}``: rename, set the access addresses (and,
    from 2.19, the description), as Nova.

    :returns: ``{"server": {...}}``, 200 (below 2.75 without the extension
        fields, as Nova).
    :raises ServerNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:servers:update`` refuses.
    :raises faults.BadRequest: a bad body.
    """
    server = policy.authorized_server(req, state.db, rules.UPDATE, server_id)
    body = req.validated_body(schemas.server_update(req.version.at_least("2.19")))["server"]
    columns = {
        "name": "name",
        "accessIPv4": "access_ip_v4",
        "accessIPv6": "access_ip_v6",
        "description": "description",
    }
    values = {column: body[key] for key, column in columns.items() if key in body}
    if "access_ip_v6" in values:
        values["access_ip_v6"] = canonical_ipv6(values["access_ip_v6"])
    if values:
        server = state.db.server_update(server.uuid, **values)
    LOG.info("Server %s updated: %s", server.uuid, ", ".join(sorted(values)) or "nothing")
    return json_response(
        {"server": view(req, server, statuses=host_statuses(state, req), updated=True)}
    )


def canonical_ipv6(value: str | None) -> str | None:
    """An IPv6 address in its short standard form (RFC 5952), as Nova stores it.

    The schema has already checked the format; ``0000:...:babe:220.12.22.2``
    (41 characters) becomes ``::babe:dc0c:1602``, which always fits the
    column. A value that does not parse (an empty string) is kept as given.
    """
    if not value:
        return value
    try:
        return ipaddress.IPv6Address(value).compressed
    except ValueError:
        return value


def delete(state: "ApiState", req: ApiRequest, server_id: str) -> webob.Response:
    """``DELETE /servers/{server_id}``: mark it ``deleting`` and cast ``delete_server``.

    Allowed in any state, as in Nova: the conductor also closes a resize in
    flight. Deleting a server already being deleted casts again (a lost cast
    is retried by repeating the call).

    :returns: 204.
    :raises ServerNotFound: unknown, or another project's: 404.
    """
    scope = req.project_scope()
    policy.authorized_server(req, state.db, rules.DELETE, server_id)
    # NOTE: recorded first, in one transaction with closing a resize in
    # flight: every later conductor step sees it and stands down.
    actions.begin_delete(state.db, server_id, scope, context=req.context)
    state.conductor.delete_server(req.context, server_id)
    LOG.info("Server %s deletion requested", server_id)
    return empty_response(204)
