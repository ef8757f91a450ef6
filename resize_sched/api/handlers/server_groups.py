"""Server groups: ``/v2.1/os-server-groups``.

List, show, create and delete, as Nova's API: a group is shown with
``policies`` (a list of one) and an empty ``metadata`` up to 2.63, with
``policy`` and ``rules`` from 2.64; ``project_id`` and ``user_id`` from
2.13; ``members`` are its live servers. The soft policies are accepted from
2.15, ``rules`` (``max_server_per_host``, anti-affinity only) from 2.64.
A project sees only its own groups: another project's is a 404, as an
unknown one; an administrator sees every group and lists them all with
``all_projects``. Creating one counts against the ``server_groups`` quota.

Servers join a group when created with the ``group`` scheduler hint
(checked by :func:`requested_group`, called by ``POST /servers``; the
member row is written with the server's) and leave it when deleted.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults, policy, quota_check, schemas
from resize_sched.api.request import ApiRequest, empty_response, int_param, json_response
from resize_sched.conductor.tasks.policy import hinted_group
from resize_sched.db import models
from resize_sched.db.project_scope import ALL_PROJECTS
from resize_sched.policies import server_groups as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The microversion from which a group has one ``policy`` and its ``rules``.
POLICY_AND_RULES = "2.64"

#: The most groups one page lists (Nova's ``[api] max_limit`` default).
MAX_LIMIT = 1000


def view(req: ApiRequest, group: models.ServerGroup, members: list[str]) -> dict[str, Any]:
    """A group as the Compute API shows it at the request's microversion."""
    body: dict[str, Any] = {"id": group.uuid, "name": group.name}
    if req.version.at_least(POLICY_AND_RULES):
        body["policy"] = group.policy
        body["rules"] = dict(group.rules or {})
    else:
        body["policies"] = [group.policy]
        body["metadata"] = {}
    body["members"] = list(members)
    if req.version.at_least("2.13"):
        body["project_id"] = group.project_id
        body["user_id"] = group.user_id
    return body


def _target(group: models.ServerGroup) -> dict[str, str]:
    return {"project_id": group.project_id, "user_id": group.user_id}


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /os-server-groups``: the caller's project's groups (every
    project's for an administrator asking ``all_projects``), ``limit`` and
    ``offset`` paging them.

    :returns: ``{"server_groups": [...]}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-server-groups:index`` refuses.
    :raises faults.BadRequest: a bad ``limit`` or ``offset``.
    """
    policy.authorize(req, rules.INDEX)
    limit = int_param(req, "limit", minimum=0)
    offset = int_param(req, "offset", minimum=0) or 0
    limit = MAX_LIMIT if limit is None else min(limit, MAX_LIMIT)
    scope: Any = req.context.project_id
    # NOTE: as Nova, a non-admin asking all_projects gets its own groups.
    if "all_projects" in req.GET and req.context.is_admin:
        policy.authorize(req, rules.INDEX_ALL_PROJECTS)
        scope = ALL_PROJECTS
    groups = state.db.group_list(scope, limit=limit, offset=offset) if limit else []
    members = state.db.group_members(g.id for g in groups)
    return json_response({"server_groups": [view(req, g, members[g.id]) for g in groups]})


def _visible(state: "ApiState", req: ApiRequest, group_id: str) -> models.ServerGroup:
    return state.db.group_get(group_id, req.project_scope())


def show(state: "ApiState", req: ApiRequest, server_group_id: str) -> webob.Response:
    """``GET /os-server-groups/{server_group_id}``.

    :returns: ``{"server_group": {...}}``, 200.
    :raises ServerGroupNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:os-server-groups:show`` refuses.
    """
    group = _visible(state, req, server_group_id)
    policy.authorize(req, rules.SHOW, _target(group))
    members = state.db.group_members([group.id])[group.id]
    return json_response({"server_group": view(req, group, members)})


def create(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``POST /os-server-groups``: a group in the caller's project.

    :returns: ``{"server_group": {...}}``, 200 (as Nova).
    :raises faults.Forbidden: ``os_compute_api:os-server-groups:create``
        refuses, or the ``server_groups`` quota is used up.
    :raises faults.BadRequest: a bad body (an unknown policy, rules on a
        policy other than ``anti-affinity``); nothing is created.
    """
    ctxt = req.context
    policy.authorize(req, rules.CREATE)
    body = req.validated_body(schemas.server_group_create(req.version))["server_group"]
    if req.version.at_least(POLICY_AND_RULES):
        group_policy = body["policy"]
        group_rules = dict(body.get("rules") or {})
        if group_rules and group_policy != "anti-affinity":
            raise faults.BadRequest("Only anti-affinity policy supports rules.")
        if "max_server_per_host" in group_rules:
            group_rules["max_server_per_host"] = schemas.as_int(
                group_rules["max_server_per_host"], "max_server_per_host"
            )
    else:
        group_policy, group_rules = body["policies"][0], {}
    quota_check.enforce_one(
        state,
        ctxt.project_id,
        ctxt.user_id,
        "server_groups",
        1,
        state.db.group_count(ctxt.project_id),
        "Quota exceeded, too many server groups.",
    )
    group = state.db.group_create(
        name=body["name"],
        project_id=ctxt.project_id,
        user_id=ctxt.user_id,
        policy=group_policy,
        rules=group_rules,
    )
    return json_response({"server_group": view(req, group, [])})


def delete(state: "ApiState", req: ApiRequest, server_group_id: str) -> webob.Response:
    """``DELETE /os-server-groups/{server_group_id}``: its members stay, in no group.

    :returns: 204.
    :raises ServerGroupNotFound: unknown, or another project's: 404.
    :raises faults.Forbidden: ``os_compute_api:os-server-groups:delete`` refuses.
    """
    group = _visible(state, req, server_group_id)
    policy.authorize(req, rules.DELETE, _target(group))
    state.db.group_delete(group.uuid, req.project_scope())
    return empty_response(204)


def requested_group(
    state: "ApiState", req: ApiRequest, hints: dict[str, Any], count: int = 1
) -> str | None:
    """The group a server create's ``group`` hint names, checked before
    anything is written: it must exist in the caller's project (any
    project's for an administrator) and have room under the
    ``server_group_members`` quota for ``count`` new members.

    :returns: the group's uuid, or None without the hint.
    :raises faults.BadRequest: no such group (Nova's 400).
    :raises faults.Forbidden: the group is full under its quota.
    """
    group_uuid = hinted_group(hints)
    if group_uuid is None:
        return None
    try:
        group = state.db.group_get(group_uuid, req.project_scope())
    except exception.ServerGroupNotFound as exc:
        raise faults.BadRequest(exc.message) from None
    ctxt = req.context
    members = state.db.group_members([group.id])[group.id]
    quota_check.enforce_one(
        state,
        ctxt.project_id,
        ctxt.user_id,
        "server_group_members",
        count,
        len(members),
        "Quota exceeded, too many servers in group",
    )
    return group.uuid
