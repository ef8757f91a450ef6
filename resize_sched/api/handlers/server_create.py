"""Server create: ``POST /v2.1/servers``, one server or more (multiple create).

Each server is recorded in BUILD (through :func:`actions.create_server`, its
quota checked and rechecked) and ``build_server`` is cast to the conductor
for each. The zone asked (``availability_zone``, else ``[DEFAULT]
default_schedule_zone``) must exist (else 400). ``imageRef`` is recorded
(and checked against the Image service when ``[glance]`` is configured,
:mod:`resize_sched.api.glance`); block device mappings are refused.
"""

import secrets
import uuid as uuidlib
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions, exception, quota
from resize_sched.api import faults, glance, policy, schemas
from resize_sched.api.handlers import availability_zones, server_groups
from resize_sched.api.handlers.flavors import visible_flavor
from resize_sched.api.handlers.servers import canonical_ipv6, check_metadata_quota, flavor_ref
from resize_sched.api.request import ApiRequest, json_response
from resize_sched.db import models
from resize_sched.policies import servers as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The length of a generated ``adminPass`` (Nova's default).
PASSWORD_LENGTH = 12


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


def _generate_password() -> str:
    # NOTE: Nova's alphabet: no look-alike letters or digits.
    alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    return "".join(secrets.choice(alphabet) for _ in range(PASSWORD_LENGTH))
