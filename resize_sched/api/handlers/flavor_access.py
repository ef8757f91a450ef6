"""Flavor access: which projects may use a private flavor, listed and changed.

``/v2.1/flavors/{id}/os-flavor-access`` and the flavor actions
``addTenantAccess`` and ``removeTenantAccess`` (admin), as Nova's.

A private flavor is seen and used by administrators and by the projects it
is shared with (``flavor_projects``); a public one has no access list (404
to list it, 409 to add to it).
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import ApiRequest, json_response
from resize_sched.policies import quotas as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)


def _tenant_action(name: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            name: {
                "type": "object",
                "properties": {
                    "tenant": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 255,
                        "pattern": r"^[^\x00-\x1f\x7f-\x9f]*\Z",
                    }
                },
                "required": ["tenant"],
                "additionalProperties": False,
            }
        },
        "required": [name],
        "additionalProperties": False,
    }


ADD = _tenant_action("addTenantAccess")
REMOVE = _tenant_action("removeTenantAccess")


def _body(flavorid: str, projects: list[str]) -> webob.Response:
    return json_response(
        {"flavor_access": [{"flavor_id": flavorid, "tenant_id": p} for p in projects]}
    )


def index(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``GET /flavors/{flavor_id}/os-flavor-access`` (admin).

    :returns: ``{"flavor_access": [{"flavor_id", "tenant_id"}...]}``, 200.
    :raises FlavorNotFound: unknown flavor: 404.
    :raises faults.NotFound: a public flavor (it has no list).
    """
    policy.authorize(req, rules.FLAVOR_ACCESS)
    flavor = state.db.flavor_get(flavor_id)
    if flavor.is_public:
        raise faults.NotFound("Access list not available for public flavors.")
    return _body(flavor.flavorid, state.db.flavor_access_list(flavor_id))


def action(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``POST /flavors/{flavor_id}/action``: ``addTenantAccess`` or ``removeTenantAccess``.

    :returns: the access list after the change, 200.
    :raises faults.BadRequest: another action, or a bad body.
    :raises faults.Conflict: adding to a public flavor.
    :raises FlavorAccessExists: already shared: 409.
    :raises FlavorAccessNotFound: removing a project it was not shared with: 404.
    """
    body = req.validated_body({"type": "object", "minProperties": 1, "maxProperties": 1})
    if "addTenantAccess" in body:
        policy.authorize(req, rules.FLAVOR_ACCESS_ADD)
        schemas.validate(body, ADD)
        project_id = body["addTenantAccess"]["tenant"]
        flavor = state.db.flavor_get(flavor_id)
        if flavor.is_public:
            raise faults.Conflict("Can not add access to a public flavor.")
        projects = state.db.flavor_access_add(flavor_id, project_id)
        LOG.info("Flavor %s shared with project %s", flavor_id, project_id)
    elif "removeTenantAccess" in body:
        policy.authorize(req, rules.FLAVOR_ACCESS_REMOVE)
        schemas.validate(body, REMOVE)
        project_id = body["removeTenantAccess"]["tenant"]
        projects = state.db.flavor_access_remove(flavor_id, project_id)
        LOG.info("Flavor %s no longer shared with project %s", flavor_id, project_id)
    else:
        raise faults.BadRequest(f"Unknown flavor action {next(iter(body))!r}.")
    return _body(flavor_id, projects)
