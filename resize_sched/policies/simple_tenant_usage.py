"""Rules of ``os-simple-tenant-usage``: every project's usage for
administrators, a project's own for its readers, as in Nova."""

from resize_sched.policies import base

USAGE = "os_compute_api:os-simple-tenant-usage:%s"

LIST = USAGE % "list"
SHOW = USAGE % "show"

RULES = [
    base.rule(
        SHOW,
        base.PROJECT_READER_OR_ADMIN,
        "Show one project's usage over a period: server hours and the vCPU, "
        "memory and disk hours of its servers' flavors.",
        "GET /os-simple-tenant-usage/{tenant_id}",
    ),
    base.rule(
        LIST,
        base.ADMIN,
        "List every project's usage over a period.",
        "GET /os-simple-tenant-usage",
    ),
]
