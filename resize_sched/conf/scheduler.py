"""Options of the ``[scheduler]`` group: how destinations are chosen."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "scheduler",
    title="Scheduler options",
    help="How the scheduler turns Placement's allocation candidates into a chosen "
    "host and its alternates.",
)

OPTS = [
    cfg.IntOpt(
        "max_attempts",
        default=3,
        min=1,
        help="Hosts tried for one resize: the chosen host plus up to max_attempts - 1 "
        "alternates, used when a claim is refused or a compute host fails to "
        "prepare. Raise it on busy clouds where claims race; 1 disables rescheduling.",
    ),
    cfg.IntOpt(
        "max_placement_results",
        default=1000,
        min=1,
        help="The limit sent with GET /allocation_candidates. Placement builds every "
        "candidate before applying it, so a lower value shrinks the response but "
        "not Placement's own work; filters and weighers see only these candidates.",
    ),
    cfg.FloatOpt(
        "compute_node_cache_seconds",
        default=5.0,
        min=0,
        help="Seconds the scheduler uses a candidate's compute node row (host name, "
        "hypervisor, failed builds, its service's forced_down flag and last heartbeat) "
        "after reading it, instead of reading every candidate's row for every request. "
        "Capacity and usage always come from Placement's answer, and a disabled service "
        "is left out by Placement's COMPUTE_STATUS_DISABLED trait at once; a service "
        "forced down or no longer reporting is seen up to this many seconds late, on top "
        "of service_down_time; a row that keeps its host out (forced down, disabled, an "
        "old heartbeat) is read again at every request, so a host that is back is seen "
        "at once. Keep it well below service_down_time. A resize's source is always "
        "read fresh. 0 reads every row for every request.",
    ),
    cfg.BoolOpt(
        "limit_tenants_to_placement_aggregate",
        default=False,
        help="Isolate projects by host aggregate, asked of Placement: a project named in "
        "an aggregate's filter_tenant_id metadata (or filter_tenant_id2, ...: one key per "
        "project) is placed only on that aggregate's hosts (and those of any other "
        "aggregate naming it). A project no aggregate names goes anywhere, unless "
        "placement_aggregate_required_for_tenants is set. Other projects may still land on "
        "those hosts: keep them off with the AggregateMultiTenancyIsolation filter.",
    ),
    cfg.BoolOpt(
        "placement_aggregate_required_for_tenants",
        default=False,
        help="With limit_tenants_to_placement_aggregate, a project that no aggregate's "
        "filter_tenant_id metadata names cannot be placed at all (its builds and moves "
        "find no valid host). Set it when every project must be given its hosts "
        "explicitly.",
    ),
]
