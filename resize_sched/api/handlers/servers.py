"""Servers: ``/v2.1/servers``: list, show, update and delete.

Delete marks the server ``deleting`` and casts ``delete_server``. A project
sees only its own servers: another project's server is a 404, as an unknown
one. An administrator may show or delete any server, and lists every
project's with ``all_tenants`` (as in Nova; without it, only its own).

The body of each server is :mod:`.server_view`'s; create (``POST
/servers``) is :mod:`.server_create`. The small rules a server's fields
follow wherever they are written (:func:`flavor_ref`,
:func:`canonical_ipv6`, :func:`check_metadata_quota`) are here.
"""

import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import actions
from resize_sched.api import policy, quota_check, schemas
from resize_sched.api.handlers.availability_zones import HostZones
from resize_sched.api.handlers.server_view import host_statuses, view
from resize_sched.api.name_filter import NameFilter
from resize_sched.api.request import (
    ApiRequest,
    empty_response,
    json_response,
    paginate,
    parse_bool,
)
from resize_sched.db import models
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.policies import servers as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def flavor_ref(value: int | str) -> str:
    """The flavor id in a ``flavorRef``: an id, or a URL ending in one.

    :param value: the ``flavorRef`` as sent.
    :returns: the flavor id.
    """
    return str(value).rstrip("/").rsplit("/", 1)[-1]


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


def check_metadata_quota(state: "ApiState", owner: Any, metadata: Mapping[str, str]) -> None:
    """Refuse more metadata items than a server may have (403, as Nova).

    :param owner: what names the project and user whose ``metadata_items``
        quota applies (the request's context, or the server).
    """
    quota_check.enforce_one(
        state,
        owner.project_id,
        owner.user_id,
        "metadata_items",
        len(metadata),
        0,
        "Maximum number of metadata items exceeds {limit}",
    )


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
