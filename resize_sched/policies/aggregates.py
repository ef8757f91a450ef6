"""Rules of ``os-aggregates`` (host aggregates and the availability zones
they make) and ``os-availability-zone``. Aggregates are administrators'
only, as in Nova; anyone may list the zones, only administrators see their
hosts and services."""

from resize_sched.policies import base

AGGREGATES = "os_compute_api:os-aggregates:%s"

INDEX = AGGREGATES % "index"
CREATE = AGGREGATES % "create"
SHOW = AGGREGATES % "show"
UPDATE = AGGREGATES % "update"
DELETE = AGGREGATES % "delete"
ADD_HOST = AGGREGATES % "add_host"
REMOVE_HOST = AGGREGATES % "remove_host"
SET_METADATA = AGGREGATES % "set_metadata"

ZONE_LIST = "os_compute_api:os-availability-zone:list"
ZONE_DETAIL = "os_compute_api:os-availability-zone:detail"

#: Nova's "anyone with a token" check string.
ANY = "@"

RULES = [
    base.rule(INDEX, base.ADMIN, "List host aggregates.", "GET /os-aggregates"),
    base.rule(
        CREATE,
        base.ADMIN,
        "Create a host aggregate (with an availability zone, optionally).",
        "POST /os-aggregates",
    ),
    base.rule(
        SHOW,
        base.ADMIN,
        "Show a host aggregate, its hosts and metadata.",
        "GET /os-aggregates/{aggregate_id}",
    ),
    base.rule(
        UPDATE,
        base.ADMIN,
        "Rename a host aggregate or change its availability zone.",
        "PUT /os-aggregates/{aggregate_id}",
    ),
    base.rule(
        DELETE,
        base.ADMIN,
        "Delete a host aggregate that has no host.",
        "DELETE /os-aggregates/{aggregate_id}",
    ),
    base.rule(
        ADD_HOST,
        base.ADMIN,
        "Add a compute host to an aggregate (its provider joins the aggregate in Placement).",
        "POST /os-aggregates/{aggregate_id}/action (add_host)",
    ),
    base.rule(
        REMOVE_HOST,
        base.ADMIN,
        "Remove a host from an aggregate (its provider leaves the aggregate in Placement).",
        "POST /os-aggregates/{aggregate_id}/action (remove_host)",
    ),
    base.rule(
        SET_METADATA,
        base.ADMIN,
        "Set or remove metadata keys of an aggregate (availability_zone, filter_tenant_id...).",
        "POST /os-aggregates/{aggregate_id}/action (set_metadata)",
    ),
    base.rule(
        ZONE_LIST,
        ANY,
        "List the availability zones and whether each is available.",
        "GET /os-availability-zone",
    ),
    base.rule(
        ZONE_DETAIL,
        base.ADMIN,
        "List the availability zones with their hosts and the services on them.",
        "GET /os-availability-zone/detail",
    ),
]
