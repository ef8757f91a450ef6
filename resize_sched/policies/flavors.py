"""Rules of flavor management and flavor extra specs.

Listing and showing flavors has no rule (as in Nova): everyone sees the
public ones and only an administrator (``context_is_admin``) the private
ones.
"""

from resize_sched.policies import base

MANAGE = "os_compute_api:os-flavor-manage:%s"
EXTRA_SPECS = "os_compute_api:os-flavor-extra-specs:%s"

MANAGE_CREATE = MANAGE % "create"
MANAGE_DELETE = MANAGE % "delete"
EXTRA_SPECS_INDEX = EXTRA_SPECS % "index"
EXTRA_SPECS_SHOW = EXTRA_SPECS % "show"
EXTRA_SPECS_CREATE = EXTRA_SPECS % "create"
EXTRA_SPECS_UPDATE = EXTRA_SPECS % "update"
EXTRA_SPECS_DELETE = EXTRA_SPECS % "delete"

_SPECS = "/flavors/{flavor_id}/os-extra_specs"
_SPEC = _SPECS + "/{flavor_extra_spec_key}"

RULES = [
    base.rule(MANAGE_CREATE, base.ADMIN, "Create a flavor.", "POST /flavors"),
    base.rule(
        MANAGE_DELETE,
        base.ADMIN,
        "Delete a flavor (servers keep their copy of it).",
        "DELETE /flavors/{flavor_id}",
    ),
    base.rule(
        EXTRA_SPECS_INDEX,
        base.PROJECT_READER_OR_ADMIN,
        "List a flavor's extra specs; also whether flavor bodies include "
        "extra_specs (microversion 2.61 and later).",
        f"GET {_SPECS}",
        "GET /flavors/detail",
        "GET /flavors/{flavor_id}",
        "POST /flavors",
    ),
    base.rule(
        EXTRA_SPECS_SHOW,
        base.PROJECT_READER_OR_ADMIN,
        "Show one extra spec of a flavor.",
        f"GET {_SPEC}",
    ),
    base.rule(
        EXTRA_SPECS_CREATE, base.ADMIN, "Add or replace extra specs of a flavor.", f"POST {_SPECS}"
    ),
    base.rule(EXTRA_SPECS_UPDATE, base.ADMIN, "Set one extra spec of a flavor.", f"PUT {_SPEC}"),
    base.rule(
        EXTRA_SPECS_DELETE, base.ADMIN, "Remove one extra spec of a flavor.", f"DELETE {_SPEC}"
    ),
]
