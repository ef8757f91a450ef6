"""Rules of ``os-hypervisors``. Administrators only by default, as in Nova."""

from resize_sched.policies import base

HYPERVISORS = "os_compute_api:os-hypervisors:%s"

LIST = HYPERVISORS % "list"
LIST_DETAIL = HYPERVISORS % "list-detail"
SHOW = HYPERVISORS % "show"
STATISTICS = HYPERVISORS % "statistics"
UPTIME = HYPERVISORS % "uptime"
SEARCH = HYPERVISORS % "search"
SERVERS = HYPERVISORS % "servers"

RULES = [
    base.rule(
        LIST,
        base.ADMIN,
        "List hypervisors (compute nodes) with their state and status.",
        "GET /os-hypervisors",
    ),
    base.rule(
        LIST_DETAIL,
        base.ADMIN,
        "List hypervisors with their details: service, and (before 2.88) "
        "totals and usage read from Placement.",
        "GET /os-hypervisors/detail",
    ),
    base.rule(
        STATISTICS,
        base.ADMIN,
        "Show the sizes and usage of the enabled hypervisors, summed (up to microversion 2.87).",
        "GET /os-hypervisors/statistics",
    ),
    base.rule(
        SHOW, base.ADMIN, "Show one hypervisor's details.", "GET /os-hypervisors/{hypervisor_id}"
    ),
    base.rule(
        UPTIME,
        base.ADMIN,
        "Show a hypervisor's uptime (the fake driver has none: 501).",
        "GET /os-hypervisors/{hypervisor_id}/uptime",
    ),
    base.rule(
        SEARCH,
        base.ADMIN,
        "List the hypervisors whose name contains a pattern (up to microversion 2.52).",
        "GET /os-hypervisors/{hypervisor_hostname_pattern}/search",
    ),
    base.rule(
        SERVERS,
        base.ADMIN,
        "List the hypervisors whose name contains a pattern, with their servers "
        "(up to microversion 2.52).",
        "GET /os-hypervisors/{hypervisor_hostname_pattern}/servers",
    ),
]
