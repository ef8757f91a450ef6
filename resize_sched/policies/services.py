"""Rules of ``os-services``: listing compute services and disabling or
enabling them. Administrators only by default, as in Nova."""

from oslo_policy import policy

from resize_sched.policies import base

SERVICES = "os_compute_api:os-services:%s"

LIST = SERVICES % "list"
UPDATE = SERVICES % "update"

_RULES = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description="List compute services, with their state (up or down, from their "
        "heartbeats) and status (enabled or disabled).",
        operations=[{"method": "GET", "path": "/os-services"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=UPDATE,
        check_str=base.ADMIN,
        description="Disable or enable a compute service: no new build or resize lands "
        "on a disabled one (its provider gets COMPUTE_STATUS_DISABLED in Placement).",
        operations=[
            {"method": "PUT", "path": "/os-services/{service_id}"},
            {"method": "PUT", "path": "/os-services/disable"},
            {"method": "PUT", "path": "/os-services/disable-log-reason"},
            {"method": "PUT", "path": "/os-services/enable"},
        ],
        scope_types=["project"],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of os-services."""
    return list(_RULES)
