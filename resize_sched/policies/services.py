"""Rules of ``os-services``: listing compute services and disabling or
enabling them. Administrators only by default, as in Nova."""

from resize_sched.policies import base

SERVICES = "os_compute_api:os-services:%s"

LIST = SERVICES % "list"
UPDATE = SERVICES % "update"

RULES = [
    base.rule(
        LIST,
        base.ADMIN,
        "List compute services, with their state (up or down, from their "
        "heartbeats) and status (enabled or disabled).",
        "GET /os-services",
    ),
    base.rule(
        UPDATE,
        base.ADMIN,
        "Disable or enable a compute service: no new build or resize lands "
        "on a disabled one (its provider gets COMPUTE_STATUS_DISABLED in Placement).",
        "PUT /os-services/{service_id}",
        "PUT /os-services/disable",
        "PUT /os-services/disable-log-reason",
        "PUT /os-services/enable",
    ),
]
