"""Usage: ``GET /v2.1/os-simple-tenant-usage`` and ``/os-simple-tenant-usage/{tenant_id}``.

Nova's simple tenant usage, from our servers' lifetimes: a server runs from
``launched_at`` (when it first became ACTIVE) until it is deleted, or until
now; one that never launched is not counted. Over the period asked
(``start`` and ``end``, each ``YYYY-MM-DDTHH:MM:SS[.ffffff]`` in UTC, now when
absent; an end in the future is cut to now), each server counts the hours it
ran within the period, times its flavor's vCPUs, memory (MB) and disk (root
plus ephemeral, GB), summed per project.

As in Nova, the flavor is the one the server runs with now (a resized
server is counted at its new size for its whole life), and the list is of
servers, in project then uuid order, cut into pages (``limit``, ``marker``: a
server's uuid) from microversion 2.40, before the sums are made: a project
may be spread over two pages. Before 2.40 every server is counted (Nova
stops at ``[api] max_limit``), and a ``next`` link is given only when a
further page has servers (Nova gives one whenever a page is full). From
2.75 an unknown query parameter is a 400.

``GET /os-simple-tenant-usage`` (administrators by default) sums every
project's servers, with each server's usage when ``detailed=1`` (or
``true``, which openstacksdk sends and Nova ignores);
``GET /os-simple-tenant-usage/{tenant_id}`` one project's (its readers may),
always with each server's usage, and ``{}`` when it has none.
"""

import datetime
import urllib.parse
from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults, policy
from resize_sched.api.request import ApiRequest, int_param, json_response, nova_timestamp
from resize_sched.db import models
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope
from resize_sched.policies import simple_tenant_usage as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

COLLECTION = "os-simple-tenant-usage"

#: The time formats ``start`` and ``end`` are read in (Nova's).
TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")

#: The values of ``detailed`` that ask for each server's usage.
DETAILED_VALUES = ("1", "true", "yes", "on")

#: The query parameters each route knows; from 2.75 any other is a 400.
_INDEX_PARAMS = frozenset({"start", "end", "detailed", "limit", "marker"})
_SHOW_PARAMS = frozenset({"start", "end", "limit", "marker"})


def _time(req: ApiRequest, name: str) -> datetime.datetime:
    raw = req.GET.get(name)
    if not raw:
        # NOTE: as Nova: each read of the clock apart, so start < end.
        return models.utcnow()
    for fmt in TIME_FORMATS:
        try:
            value = datetime.datetime.strptime(raw, fmt)
        except ValueError:
            continue
        return value.replace(tzinfo=datetime.UTC)
    raise faults.BadRequest(
        f"Invalid datetime string: {name} {raw[:64]!r} is in an invalid format"
    )


def period(req: ApiRequest) -> tuple[datetime.datetime, datetime.datetime]:
    """The period a request asks about: ``start`` and ``end``, the end cut to now.

    Either left out (or empty) is the time of the request, as Nova reads it:
    without both, the period is the present instant (every server running
    now, with no hours yet).

    :returns: (start, stop), timezone-aware UTC.
    :raises faults.BadRequest: a time in no known format, or a start not
        before the end.
    """
    start = _time(req, "start")
    stop = _time(req, "end")
    now = models.utcnow()
    if start == stop and not req.GET.get("start") and not req.GET.get("end"):
        # NOTE: a clock too coarse to tell the two reads apart.
        stop += datetime.timedelta(microseconds=1)
    if not start < stop:
        raise faults.BadRequest(
            "Invalid start time. The start time cannot occur after the end time."
        )
    return start, min(stop, now)


def hours_within(
    launched: datetime.datetime | None,
    terminated: datetime.datetime | None,
    start: datetime.datetime,
    stop: datetime.datetime,
) -> float:
    """The hours a server ran between ``start`` and ``stop``.

    :param launched: when it launched (None: never: no hours).
    :param terminated: when it was deleted (None: still running).
    :returns: the hours, 0 when it did not run in the period.
    """
    if launched is None or launched > stop or (terminated is not None and terminated < start):
        return 0.0
    end = stop if terminated is None else min(stop, terminated)
    return max((end - max(launched, start)).total_seconds(), 0.0) / 3600.0


def server_usage(
    server: models.Server,
    start: datetime.datetime,
    stop: datetime.datetime,
    now: datetime.datetime,
) -> dict[str, Any]:
    """One server's usage over the period, as Nova's ``server_usages`` shows it."""
    flavor = server.flavor
    ended = server.deleted_at
    started = server.launched_at or server.created_at
    return {
        "instance_id": server.uuid,
        "name": server.name,
        "tenant_id": server.project_id,
        "flavor": flavor.get("name") or "",
        "vcpus": int(flavor["vcpus"]),
        "memory_mb": int(flavor["memory_mb"]),
        "local_gb": int(flavor["root_gb"]) + int(flavor.get("ephemeral_gb") or 0),
        "hours": hours_within(server.launched_at, ended, start, stop),
        "started_at": nova_timestamp(started),
        "ended_at": nova_timestamp(ended),
        "state": "terminated" if ended is not None else server.vm_state,
        "uptime": max(int(((ended or now) - started).total_seconds()), 0),
    }


def summarize(
    servers: list[models.Server],
    start: datetime.datetime,
    stop: datetime.datetime,
    *,
    detailed: bool,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Per-project sums over the servers (in the servers' order of projects).

    :returns: the projects' usages, and every server's usage.
    """
    now = models.utcnow()
    projects: dict[str, dict[str, Any]] = {}
    every: list[dict[str, Any]] = []
    for server in servers:
        usage = server_usage(server, start, stop, now)
        summary = projects.get(server.project_id)
        if summary is None:
            summary = projects[server.project_id] = {
                "tenant_id": server.project_id,
                "start": nova_timestamp(start),
                "stop": nova_timestamp(stop),
                "total_hours": 0.0,
                "total_vcpus_usage": 0.0,
                "total_memory_mb_usage": 0.0,
                "total_local_gb_usage": 0.0,
            }
            if detailed:
                summary["server_usages"] = []
        hours = usage["hours"]
        summary["total_hours"] += hours
        summary["total_vcpus_usage"] += usage["vcpus"] * hours
        summary["total_memory_mb_usage"] += usage["memory_mb"] * hours
        summary["total_local_gb_usage"] += usage["local_gb"] * hours
        if detailed:
            summary["server_usages"].append(usage)
        every.append(usage)
    return list(projects.values()), every


def _servers(
    state: "ApiState", req: ApiRequest, known: frozenset[str], project_id: ProjectScope
) -> tuple[list[models.Server], datetime.datetime, datetime.datetime, bool]:
    """The servers of one page, the period, and whether another page follows."""
    if req.version.at_least("2.75"):
        unknown = sorted(set(req.GET.keys()) - known)
        if unknown:
            raise faults.BadRequest(f"Additional properties are not allowed: {', '.join(unknown)}")
    start, stop = period(req)
    limit = marker = None
    if req.version.at_least("2.40"):
        limit = int_param(req, "limit", minimum=0)
        marker = req.GET.get("marker")
    if limit == 0:
        # NOTE: as Nova, a page of nothing.
        return [], start, stop, False
    try:
        found = state.db.servers_running_between(
            start,
            stop,
            project_id=project_id,
            limit=None if limit is None else limit + 1,
            marker=marker,
        )
    except exception.ServerNotFound:
        raise faults.BadRequest(f"Marker {marker} could not be found.") from None
    more = limit is not None and len(found) > limit
    return (found[:limit] if more else found), start, stop, more


def _next_link(req: ApiRequest, path: list[str], usages: list[dict[str, Any]]) -> dict[str, str]:
    params = {k: v for k, v in req.GET.items() if k != "marker"}
    params["marker"] = usages[-1]["instance_id"]
    query = urllib.parse.urlencode(sorted(params.items()))
    return {"rel": "next", "href": f"{req.link(*path)}?{query}"}


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-simple-tenant-usage``: every project's usage over the period.

    :returns: ``{"tenant_usages": [...]}``, 200 (``tenant_usages_links``
        from 2.40 when another page follows).
    :raises faults.Forbidden: ``os_compute_api:os-simple-tenant-usage:list`` refuses.
    :raises faults.BadRequest: a bad time, period, limit, marker or parameter.
    """
    policy.authorize(req, rules.LIST)
    servers, start, stop, more = _servers(state, req, _INDEX_PARAMS, project_id=ALL_PROJECTS)
    # NOTE: Nova reads only "1"; openstacksdk sends "True" (so that
    # ``openstack usage list`` shows no servers against Nova): both mean it here.
    detailed = (req.GET.get("detailed") or "").strip().lower() in DETAILED_VALUES
    usages, every = summarize(servers, start, stop, detailed=detailed)
    body: dict[str, Any] = {"tenant_usages": usages}
    if more:
        body["tenant_usages_links"] = [_next_link(req, [COLLECTION], every)]
    return json_response(body)


def show(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``GET /os-simple-tenant-usage/{tenant_id}``: one project's usage over the period.

    :returns: ``{"tenant_usage": {...}}`` (``{}`` when it ran nothing), 200
        (``tenant_usage_links`` from 2.40 when another page follows).
    :raises faults.Forbidden: ``os_compute_api:os-simple-tenant-usage:show``
        refuses (by default another project's readers).
    :raises faults.BadRequest: a bad time, period, limit, marker or parameter.
    """
    policy.authorize(req, rules.SHOW, {"project_id": tenant_id})
    servers, start, stop, more = _servers(state, req, _SHOW_PARAMS, project_id=tenant_id)
    usages, every = summarize(servers, start, stop, detailed=True)
    body: dict[str, Any] = {"tenant_usage": usages[0] if usages else {}}
    if more:
        body["tenant_usage_links"] = [_next_link(req, [COLLECTION, tenant_id], every)]
    return json_response(body)
