"""Flavor extra specs: ``/v2.1/flavors/{flavor_id}/os-extra_specs``.

Extra specs are how an operator asks the scheduler for more than the
flavor's sizes: ``resources:CLASS=N`` for other resource classes (or to
override a standard one), ``trait:NAME=required|forbidden`` for traits;
``resourcesN:CLASS=N`` and ``traitN:NAME=...`` for a numbered request group
that one provider must satisfy (a vGPU from one GPU child),
``group_policy=isolate|none`` for how numbered groups share providers, and
``member_of`` for aggregates, all as Placement's query parameters;
``hw:numa_nodes`` (with ``hw:numa_cpus.X`` / ``hw:numa_mem.X``) for the
guest's NUMA cells, each cell's VCPU and MEMORY_MB from one provider
(numbered groups ``_NUMA<X>``, see :mod:`resize_sched.resources.numa`);
``hw:cpu_policy`` (with ``hw:cpu_dedicated_mask`` and the thread and
emulator policies) for PCPU instead of VCPU, as Nova translates it
(:mod:`resize_sched.resources.cpu`). A key this service does not honour
(one of Nova's it does not act on, or an unknown key in a namespace Nova
validates) is refused with 400 naming it and why, never stored and ignored:
:mod:`resize_sched.resources.extra_specs` is the table. Anyone
who may see the flavor may read them; only an administrator sets or removes
them (the ``os_compute_api:os-flavor-extra-specs:*`` policy rules). A change
is checked as a whole (a bad ``resources`` value or ``group_policy`` is
refused with 400 and nothing written) and applies to builds and resizes from
then on; servers keep the flavor they have.
"""

from typing import TYPE_CHECKING

import webob

from resize_sched import exception
from resize_sched.api import faults, policy, schemas
from resize_sched.api.handlers.flavors import visible_flavor
from resize_sched.api.request import ApiRequest, empty_response, json_response
from resize_sched.policies import flavors as rules

if TYPE_CHECKING:
    from resize_sched.api.state import ApiState


def index(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``GET .../os-extra_specs``: every extra spec of the flavor.

    :returns: ``{"extra_specs": {...}}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-flavor-extra-specs:index`` refuses.
    :raises FlavorNotFound: unknown (or private, for a non-admin): 404.
    """
    policy.authorize(req, rules.EXTRA_SPECS_INDEX)
    flavor = visible_flavor(req, state.db, flavor_id)
    return json_response({"extra_specs": dict(flavor.extra_specs or {})})


def create(state: "ApiState", req: ApiRequest, flavor_id: str) -> webob.Response:
    """``POST .../os-extra_specs`` (admin): add or replace the given specs.

    :returns: ``{"extra_specs": {...}}`` with the specs given, 200.
    :raises faults.Forbidden: ``os_compute_api:os-flavor-extra-specs:create`` refuses.
    :raises faults.BadRequest: a bad body.
    :raises InvalidFlavor: specs the scheduler could not use, or a key it
        does not honour: 400.
    :raises FlavorNotFound: unknown: 404.
    """
    policy.authorize(req, rules.EXTRA_SPECS_CREATE)
    specs = _strings(req.validated_body(schemas.EXTRA_SPECS_CREATE)["extra_specs"])
    state.db.flavor_update_extra_specs(flavor_id, updates=specs)
    return json_response({"extra_specs": specs})


def show(state: "ApiState", req: ApiRequest, flavor_id: str, key: str) -> webob.Response:
    """``GET .../os-extra_specs/{key}``.

    :returns: ``{key: value}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-flavor-extra-specs:show`` refuses.
    :raises FlavorNotFound, FlavorExtraSpecNotFound: 404.
    """
    policy.authorize(req, rules.EXTRA_SPECS_SHOW)
    specs = visible_flavor(req, state.db, flavor_id).extra_specs or {}
    if key not in specs:
        raise exception.FlavorExtraSpecNotFound(flavor_id=flavor_id, key=key)
    return json_response({key: specs[key]})


def update(state: "ApiState", req: ApiRequest, flavor_id: str, key: str) -> webob.Response:
    """``PUT .../os-extra_specs/{key}`` (admin): the body is ``{key: value}``.

    :returns: ``{key: value}``, 200.
    :raises faults.Forbidden: ``os_compute_api:os-flavor-extra-specs:update`` refuses.
    :raises faults.BadRequest: a bad body, or one naming another key.
    :raises InvalidFlavor: a value the scheduler could not use, or a key it
        does not honour: 400.
    :raises FlavorNotFound: unknown: 404.
    """
    policy.authorize(req, rules.EXTRA_SPECS_UPDATE)
    specs = _strings(req.validated_body(schemas.EXTRA_SPEC_UPDATE))
    if list(specs) != [key]:
        raise faults.BadRequest(f"The body must set exactly the key in the URL, {key!r}.")
    state.db.flavor_update_extra_specs(flavor_id, updates=specs)
    return json_response(specs)


def delete(state: "ApiState", req: ApiRequest, flavor_id: str, key: str) -> webob.Response:
    """``DELETE .../os-extra_specs/{key}`` (admin).

    :returns: 200 without a body (as Nova).
    :raises faults.Forbidden: ``os_compute_api:os-flavor-extra-specs:delete`` refuses.
    :raises FlavorNotFound, FlavorExtraSpecNotFound: 404.
    """
    policy.authorize(req, rules.EXTRA_SPECS_DELETE)
    state.db.flavor_update_extra_specs(flavor_id, remove=key)
    return empty_response(200)


def _strings(specs: dict[str, object]) -> dict[str, str]:
    # NOTE: as Nova, numbers and booleans are taken and stored as strings.
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in specs.items()}
