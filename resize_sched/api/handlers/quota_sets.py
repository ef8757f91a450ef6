"""Quotas: ``/v2.1/os-quota-sets``, ``/v2.1/os-quota-class-sets`` and ``/v2.1/limits``.

As Nova's: a project's limits (``user_id`` for one user's within it), the
defaults, the limits with usage (``detail``: ``in_use``, ``reserved`` always
0, ``limit``), an administrator's update (refused below usage unless
``force``) and delete (the defaults apply again); the ``default`` quota
class; the caller's absolute limits. What a body shows follows the
microversion: nova-network's resources until 2.35, the injected files'
until 2.56; a quota class shows the server group resources from 2.50 on and
nova-network's until 2.49. Every refused update changes nothing: each value
is checked before any is written, and all are written in one transaction.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import quota
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, empty_response, json_response
from resize_sched.policies import quotas as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

_SERVER_GROUPS = ("server_groups", "server_group_members")


def shown(req: ApiRequest, *, quota_class: bool = False) -> tuple[str, ...]:
    """The resources a quota body names at the request's microversion."""
    version = req.version
    hidden: set[str] = set()
    if quota_class:
        if version.at_least("2.50"):
            hidden.update(quota.NETWORK)
        else:
            hidden.update(_SERVER_GROUPS)
    elif version.at_least("2.36"):
        hidden.update(quota.NETWORK)
    if version.at_least("2.57"):
        hidden.update(quota.INJECTED)
    return tuple(r for r in quota.ALL_RESOURCES if r not in hidden)


def _body(values: dict[str, Any], names: tuple[str, ...], id_: str | None) -> dict[str, Any]:
    body = {name: values[name] for name in names}
    if id_ is not None:
        body = {"id": id_, **body}
    return body


def _user_id(req: ApiRequest) -> str | None:
    return req.GET.get("user_id") or None


def show(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``GET /os-quota-sets/{tenant_id}`` (``?user_id=``): the limits.

    :returns: ``{"quota_set": {"id": ..., resource: limit...}}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-quota-sets:show`` refuses.
    """
    policy.authorize(req, rules.QUOTA_SHOW, {"project_id": tenant_id})
    found = quota.limits(state.db, state.conf, tenant_id, _user_id(req))
    return json_response({"quota_set": _body(found, shown(req), tenant_id)})


def detail(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``GET /os-quota-sets/{tenant_id}/detail``: each limit with its usage.

    :returns: ``{"quota_set": {"id": ..., resource: {"in_use", "limit",
        "reserved"}...}}``, 200.
    """
    policy.authorize(req, rules.QUOTA_DETAIL, {"project_id": tenant_id})
    user_id = _user_id(req)
    found = quota.limits(state.db, state.conf, tenant_id, user_id)
    used = quota.usage(state.db, tenant_id, user_id)
    values = {name: {"in_use": used[name], "limit": found[name], "reserved": 0} for name in found}
    return json_response({"quota_set": _body(values, shown(req), tenant_id)})


def defaults(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``GET /os-quota-sets/{tenant_id}/defaults``: what a project has until set.

    :returns: ``{"quota_set": {"id": ..., resource: limit...}}``, 200.
    """
    policy.authorize(req, rules.QUOTA_DEFAULTS, {"project_id": tenant_id})
    found = quota.defaults(state.db, state.conf)
    return json_response({"quota_set": _body(found, shown(req), tenant_id)})


def _limit_schema(names: tuple[str, ...], *, with_force: bool) -> dict[str, Any]:
    # NOTE: Nova's: an integer (or its string) from -1 to 2**31-1, any other key a 400.
    limit = {
        "type": ["integer", "string"],
        "pattern": r"^\s*-?[0-9]{1,10}\s*\Z",
        "minimum": -1,
        "maximum": schemas.MAX_INT,
    }
    properties: dict[str, Any] = dict.fromkeys(names, limit)
    if with_force:
        properties["force"] = {
            "type": ["boolean", "string"],
            "enum": list(schemas.BOOLEAN_VALUES),
        }
    return {
        "type": "object",
        "properties": {
            "quota_set" if with_force else "quota_class_set": {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
            }
        },
        "required": ["quota_set" if with_force else "quota_class_set"],
        "additionalProperties": False,
    }


def _as_limit(value: int | str, name: str) -> int:
    number = int(str(value).strip())
    if not -1 <= number <= schemas.MAX_INT:
        raise faults.BadRequest(
            f"Invalid input for field/attribute {name}. Value: {value!r}. "
            f"It must be between -1 and {schemas.MAX_INT}."
        )
    return number


def _unlimited(value: int) -> float:
    return float("inf") if value == quota.UNLIMITED else value


def update(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``PUT /os-quota-sets/{tenant_id}`` (``?user_id=``; admin): set limits.

    Without ``force``, a limit below what the project (or user) uses now is
    refused, and a user's limit above the project's; each refusal is a 400
    and nothing is written.

    :returns: ``{"quota_set": {resource: limit...}}`` (no ``id``, as Nova), 200.
    :raises faults.BadRequest: an unknown key, a value below -1, a limit below usage.
    """
    policy.authorize(req, rules.QUOTA_UPDATE, {"project_id": tenant_id})
    names = shown(req)
    body = req.validated_body(_limit_schema(names, with_force=True))["quota_set"]
    user_id = _user_id(req)
    force = body.pop("force", False)
    force = schemas.as_bool(force)
    wanted = {name: _as_limit(value, name) for name, value in body.items()}
    if not quota.settable(state.conf):
        # NOTE: as Nova with unified limits: accepted, nothing changes.
        LOG.info(
            "Quota update of project %s ignored: the limits are Keystone's "
            "([quota] driver = unified_limits)",
            tenant_id,
        )
        found = quota.limits(state.db, state.conf, tenant_id, user_id)
        return json_response({"quota_set": _body(found, names, None)})
    if not force:
        used = quota.usage(state.db, tenant_id, user_id)
        project = quota.limits(state.db, state.conf, tenant_id) if user_id else {}
        for name, limit in wanted.items():
            minimum = used.get(name, 0)
            if _unlimited(limit) < minimum:
                raise faults.BadRequest(
                    f"Quota limit {limit} for {name} must be greater than or equal to "
                    f"already used and reserved {minimum}."
                )
            maximum = project.get(name, quota.UNLIMITED)
            if user_id and _unlimited(limit) > _unlimited(maximum):
                raise faults.BadRequest(
                    f"Quota limit {limit} for {name} must be less than or equal to {maximum}."
                )
    state.db.quota_set_limits(tenant_id, wanted, user_id=user_id)
    LOG.info(
        "Quota of project %s%s set: %s",
        tenant_id,
        f" user {user_id}" if user_id else "",
        ", ".join(f"{k}={v}" for k, v in sorted(wanted.items())) or "nothing",
    )
    found = quota.limits(state.db, state.conf, tenant_id, user_id)
    return json_response({"quota_set": _body(found, names, None)})


def delete(state: "ApiState", req: ApiRequest, tenant_id: str) -> webob.Response:
    """``DELETE /os-quota-sets/{tenant_id}`` (``?user_id=``; admin): back to the defaults.

    :returns: 202 without a body (as Nova).
    """
    policy.authorize(req, rules.QUOTA_DELETE, {"project_id": tenant_id})
    user_id = _user_id(req)
    if not quota.settable(state.conf):
        # NOTE: as Nova with unified limits: 202, and nothing changes.
        LOG.info(
            "Quota delete of project %s ignored: the limits are Keystone's "
            "([quota] driver = unified_limits)",
            tenant_id,
        )
        return empty_response(202)
    gone = state.db.quota_destroy(tenant_id, user_id)
    LOG.info("Quota of project %s%s removed (%d limits)", tenant_id, user_id or "", gone)
    return empty_response(202)


def class_show(state: "ApiState", req: ApiRequest, id: str) -> webob.Response:
    """``GET /os-quota-class-sets/{id}`` (admin): a quota class's limits.

    A class with nothing stored shows the ``[quota]`` defaults, as Nova.

    :returns: ``{"quota_class_set": {"id": ..., resource: limit...}}``, 200.
    """
    policy.authorize(req, rules.QUOTA_CLASS_SHOW)
    return json_response(
        {"quota_class_set": _body(_class(state, id), shown(req, quota_class=True), id)}
    )


def _class(state: "ApiState", class_name: str) -> dict[str, int]:
    return quota.class_limits(state.db, state.conf, class_name)


def class_update(state: "ApiState", req: ApiRequest, id: str) -> webob.Response:
    """``PUT /os-quota-class-sets/{id}`` (admin): set a class's limits.

    :returns: ``{"quota_class_set": {resource: limit...}}`` (no ``id``), 200.
    :raises faults.BadRequest: an unknown key or a value below -1; nothing written.
    """
    policy.authorize(req, rules.QUOTA_CLASS_UPDATE)
    names = shown(req, quota_class=True)
    settable = names
    if not req.version.at_least("2.50"):
        # NOTE: as Nova: settable before 2.50, though not shown.
        settable = names + _SERVER_GROUPS
    body = req.validated_body(_limit_schema(settable, with_force=False))["quota_class_set"]
    wanted = {name: _as_limit(value, name) for name, value in body.items()}
    if quota.settable(state.conf):
        state.db.quota_class_set_limits(id, wanted)
        LOG.info(
            "Quota class %s set: %s", id, ", ".join(f"{k}={v}" for k, v in sorted(wanted.items()))
        )
    else:
        # NOTE: as Nova with unified limits: accepted, nothing changes.
        LOG.info("Quota class %s update ignored: the limits are Keystone's", id)
    return json_response({"quota_class_set": _body(_class(state, id), names, None)})


def limits(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /limits`` (``?tenant_id=`` for an administrator): absolute limits and usage.

    :returns: ``{"limits": {"absolute": {...}, "rate": []}}``, 200.
    :raises faults.Forbidden: ``tenant_id`` from a caller
        ``os_compute_api:limits:other_project`` refuses.
    """
    policy.authorize(req, rules.LIMITS)
    project_id = req.context.project_id
    asked = req.GET.get("tenant_id")
    if asked and asked != project_id:
        policy.authorize(req, rules.LIMITS_OTHER_PROJECT, {"project_id": asked})
        project_id = asked
    found = quota.limits(state.db, state.conf, project_id)
    used = quota.usage(state.db, project_id)
    absolute: dict[str, int] = {
        "maxTotalInstances": found["instances"],
        "maxTotalCores": found["cores"],
        "maxTotalRAMSize": found["ram"],
        "maxServerMeta": found["metadata_items"],
        "maxTotalKeypairs": found["key_pairs"],
        "maxServerGroups": found["server_groups"],
        "maxServerGroupMembers": found["server_group_members"],
        "totalInstancesUsed": used["instances"],
        "totalCoresUsed": used["cores"],
        "totalRAMUsed": used["ram"],
        "totalServerGroupsUsed": used["server_groups"],
    }
    version = req.version
    if not version.at_least("2.36"):
        absolute.update(
            {
                "maxTotalFloatingIps": found["floating_ips"],
                "maxSecurityGroups": found["security_groups"],
                "maxSecurityGroupRules": found["security_group_rules"],
                "totalFloatingIpsUsed": 0,
                "totalSecurityGroupsUsed": 0,
            }
        )
    if not version.at_least("2.39"):
        absolute["maxImageMeta"] = found["metadata_items"]
    if not version.at_least("2.57"):
        absolute["maxPersonality"] = found["injected_files"]
        absolute["maxPersonalitySize"] = found["injected_file_content_bytes"]
    return json_response({"limits": {"absolute": absolute, "rate": []}})
