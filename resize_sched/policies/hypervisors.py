"""Rules of ``os-hypervisors`` (and the empty ``os-aggregates`` list that
``openstack hypervisor show`` reads). Administrators only by default, as in
Nova."""

from oslo_policy import policy

from resize_sched.policies import base

HYPERVISORS = "os_compute_api:os-hypervisors:%s"

LIST = HYPERVISORS % "list"
LIST_DETAIL = HYPERVISORS % "list-detail"
SHOW = HYPERVISORS % "show"
UPTIME = HYPERVISORS % "uptime"
AGGREGATES_INDEX = "os_compute_api:os-aggregates:index"

_RULES = [
    policy.DocumentedRuleDefault(
        name=LIST,
        check_str=base.ADMIN,
        description="List hypervisors (compute nodes) with their state and status.",
        operations=[{"method": "GET", "path": "/os-hypervisors"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=LIST_DETAIL,
        check_str=base.ADMIN,
        description="List hypervisors with their details: service, and (before 2.88) "
        "totals and usage read from Placement.",
        operations=[{"method": "GET", "path": "/os-hypervisors/detail"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.ADMIN,
        description="Show one hypervisor's details.",
        operations=[{"method": "GET", "path": "/os-hypervisors/{hypervisor_id}"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=UPTIME,
        check_str=base.ADMIN,
        description="Show a hypervisor's uptime (the fake driver has none: 501).",
        operations=[{"method": "GET", "path": "/os-hypervisors/{hypervisor_id}/uptime"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=AGGREGATES_INDEX,
        check_str=base.ADMIN,
        description="List host aggregates (there are none here: an empty list).",
        operations=[{"method": "GET", "path": "/os-aggregates"}],
        scope_types=["project"],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of os-hypervisors and os-aggregates."""
    return list(_RULES)
