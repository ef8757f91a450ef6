"""Flavors: ``/v2.1/flavors``.

Everyone may list and show public flavors and the private ones shared with
their project (``os-flavor-access``, :mod:`.flavor_access`); an
administrator sees every flavor, creates or deletes
(``os_compute_api:os-flavor-manage:*``). Bodies follow the microversion: ``description`` from
2.55 (always null: we keep none), ``extra_specs`` from 2.61 (when
``os_compute_api:os-flavor-extra-specs:index`` allows). ``swap`` is always an
integer, as Nova answers from 2.75 on.
"""

from typing import TYPE_CHECKING, Any

import webob
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.request import (
    ApiRequest,
    empty_response,
    int_param,
    json_response,
    paginate,
    parse_bool,
)
from resize_sched.db import models
from resize_sched.policies import flavors as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState

LOG = logging.getLogger(__name__)

#: The columns ``sort_key`` may name (Nova's), each the attribute it sorts by.
_SORTABLE = "flavorid name memory_mb vcpus root_gb ephemeral_gb swap created_at".split()
#: ``sort_key`` values and the attribute each sorts by (``id``: the flavor id).
SORT_KEYS = {"id": "flavorid", **{column: column for column in _SORTABLE}}


def view(req: ApiRequest, flavor: models.Flavor, *, detail: bool = True) -> dict[str, Any]:
    """A flavor as the Compute API shows it.

    :param req: the request (for links and the microversion).
    :param flavor: the flavor.
    :param detail: all fields, or only id, name and links.
    :returns: the body of one flavor.
    """
    body: dict[str, Any] = {
        "id": flavor.flavorid,
        "name": flavor.name,
        "links": req.links("flavors", flavor.flavorid),
    }
    if req.version.at_least("2.55"):
        body["description"] = None
    if not detail:
        return body
    body.update(
        {
            "ram": flavor.memory_mb,
            "vcpus": flavor.vcpus,
            "disk": flavor.root_gb,
            "swap": flavor.swap,
            "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral_gb,
            "OS-FLV-DISABLED:disabled": False,
            "os-flavor-access:is_public": flavor.is_public,
            "rxtx_factor": 1.0,
        }
    )
    if req.version.at_least("2.61") and policy.allowed(req, rules.EXTRA_SPECS_INDEX):
        body["extra_specs"] = dict(flavor.extra_specs or {})
    return body


def visible_flavor(req: ApiRequest, db: Any, flavorid: str) -> models.Flavor:
    """A live flavor the caller may use.

    :param req: the request (for the caller).
    :param db: the database.
    :param flavorid: the flavor's id.
    :returns: the flavor.
    :raises FlavorNotFound: no such flavor, or a private one not shared
        with the caller's project and the caller is not an administrator.
    """
    flavor = db.flavor_get(flavorid)
    if flavor.is_public or req.context.is_admin:
        return flavor
    if flavor.id not in db.flavor_shared_with(req.context.project_id):
        raise exception.FlavorNotFound(flavor_id=flavorid)
    return flavor


def _is_public_filter(req: ApiRequest) -> bool | None:
    # NOTE: as Nova: public (and shared with the caller's project) by
    # default; "none" (openstacksdk sends the literal "None") means every
    # flavor, but only an admin sees private ones not shared with it.
    if not req.context.is_admin:
        return True
    raw = req.GET.get("is_public")
    if raw is None:
        return True
    if raw.strip().lower() == "none":
        return None
    return parse_bool(raw, "is_public")


def _listed(
    state: "ApiState", req: ApiRequest
) -> tuple[list[models.Flavor], list[dict[str, str]]]:
    is_public = _is_public_filter(req)
    flavors = state.db.flavor_list(is_public=None if is_public else is_public)
    if is_public:
        # NOTE: as Nova: "public" also takes in the flavors shared with the project.
        shared = state.db.flavor_shared_with(req.context.project_id)
        flavors = [f for f in flavors if f.is_public or f.id in shared]
    min_ram = int_param(req, "minRam")
    min_disk = int_param(req, "minDisk")
    if min_ram is not None:
        flavors = [f for f in flavors if f.memory_mb >= min_ram]
    if min_disk is not None:
        flavors = [f for f in flavors if f.root_gb >= min_disk]
    sort_key = req.GET.get("sort_key")
    sort_dir = req.GET.get("sort_dir", "asc")
    if sort_dir not in ("asc", "desc"):
        raise faults.BadRequest(f"Invalid sort_dir {sort_dir!r}; use asc or desc.")
    if sort_key is not None:
        if sort_key not in SORT_KEYS:
            raise faults.BadRequest(f"Invalid sort_key {sort_key!r}.")
        attribute = SORT_KEYS[sort_key]
        flavors.sort(key=lambda f: (getattr(f, attribute), f.flavorid))
    if sort_dir == "desc":
        flavors.reverse()
    return paginate(req, flavors, "flavorid", "flavors")


def index(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /flavors``: id, name and links of each flavor the caller may see.

    :returns: ``{"flavors": [...]}``, 200.
    :raises faults.BadRequest: a bad filter, sort or marker.
    """
    flavors, links = _listed(state, req)
    body: dict[str, Any] = {"flavors": [view(req, f, detail=False) for f in flavors]}
    if links:
        body["flavors_links"] = links
    return json_response(body)


def detail(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``GET /flavors/detail``: every field of each flavor the caller may see.

    :returns: ``{"flavors": [...]}``, 200.
    :raises faults.BadRequest: a bad filter, sort or marker.
    """
    flavors, links = _listed(state, req)
    body: dict[str, Any] = {"flavors": [view(req, f) for f in flavors]}
    if links:
        body["flavors_links"] = links
    return json_response(body)


def show(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``GET /flavors/{flavor_id}``.

    :returns: ``{"flavor": {...}}``, 200.
    :raises FlavorNotFound: unknown (or private, for a non-admin): 404.
    """
    return json_response({"flavor": view(req, visible_flavor(req, state.db, flavor_id))})


def create(state: "ApiState", req: ApiRequest) -> webob.Response:
    """``POST /flavors`` (admin): create a flavor.

    :returns: ``{"flavor": {...}}``, 200 (as Nova).
    :raises faults.Forbidden: ``os_compute_api:os-flavor-manage:create`` refuses.
    :raises faults.BadRequest: a bad body.
    :raises FlavorExists: the name or id is taken: 409.
    """
    policy.authorize(req, rules.MANAGE_CREATE)
    body = req.validated_body(schemas.FLAVOR_CREATE)["flavor"]
    flavorid = body.get("id")
    swap = body.get("swap", 0)
    flavor = state.db.flavor_create(
        body["name"],
        schemas.as_int(body["vcpus"], "vcpus"),
        schemas.as_int(body["ram"], "ram"),
        schemas.as_int(body["disk"], "disk"),
        ephemeral_gb=schemas.as_int(
            body.get("OS-FLV-EXT-DATA:ephemeral", 0), "OS-FLV-EXT-DATA:ephemeral"
        ),
        swap=0 if swap == "" else schemas.as_int(swap, "swap"),
        flavorid=None if flavorid is None else str(flavorid),
        is_public=schemas.as_bool(body.get("os-flavor-access:is_public", True)),
    )
    return json_response({"flavor": view(req, flavor)})


def delete(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``DELETE /flavors/{flavor_id}`` (admin); servers keep their copy.

    :returns: 202 without a body (as Nova).
    :raises faults.Forbidden: ``os_compute_api:os-flavor-manage:delete`` refuses.
    :raises FlavorNotFound: unknown: 404.
    """
    policy.authorize(req, rules.MANAGE_DELETE)
    state.db.flavor_delete(flavor_id)
    return empty_response(202)
