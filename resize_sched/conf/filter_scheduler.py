"""Options of the ``[filter_scheduler]`` group: which filters and weighers
judge the candidates, and how much each weigher counts.

The names are Nova's (``nova.conf`` ``[filter_scheduler]``), so an operator's
settings carry over; see ``doc/scheduler.rst``.
"""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "filter_scheduler",
    title="Filter scheduler options",
    help="The filters that remove candidate hosts and the weighers that rank those "
    "left, after Placement has answered.",
)

#: Nova's default list (its AvailabilityZoneFilter is left out there too: the
#: zone is asked of Placement as ``member_of``).
DEFAULT_FILTERS = [
    "ComputeFilter",
    "ComputeCapabilitiesFilter",
    "ImagePropertiesFilter",
    "ServerGroupAntiAffinityFilter",
    "ServerGroupAffinityFilter",
]

#: Every weigher shipped (Nova's ``nova.scheduler.weights.all_weighers``).
DEFAULT_WEIGHERS = [
    "RAMWeigher",
    "CPUWeigher",
    "DiskWeigher",
    "ServerGroupSoftAffinityWeigher",
    "ServerGroupSoftAntiAffinityWeigher",
    "BuildFailureWeigher",
]


def _moved(name: str) -> list[cfg.DeprecatedOpt]:
    return [cfg.DeprecatedOpt(name, group="scheduler")]


OPTS = [
    cfg.ListOpt(
        "enabled_filters",
        default=DEFAULT_FILTERS,
        mutable=True,
        help="Filters run on every candidate host, in this order; a host any of them "
        "refuses is not chosen. Names are the entry points of the "
        "resize_sched.scheduler.filters namespace (Nova's class names; a third-party "
        "filter installed by entry point is named the same way). Cheap and strict "
        "filters first: a host removed early is not looked at by the rest. An unknown "
        "name stops the conductor at start; on reload (SIGHUP) it is refused and the "
        "running list kept.",
    ),
    cfg.ListOpt(
        "weight_classes",
        default=DEFAULT_WEIGHERS,
        mutable=True,
        help="Weighers that rank the hosts the filters kept. Each weigher's values are "
        "scaled to 0..1 across the candidates, times its multiplier, and summed. Names "
        "are the entry points of the resize_sched.scheduler.weights namespace. An "
        "unknown name stops the conductor at start; on reload it is refused and the "
        "running list kept.",
    ),
    cfg.FloatOpt(
        "ram_weight_multiplier",
        default=1.0,
        mutable=True,
        deprecated_opts=_moved("ram_weight_multiplier"),
        help="RAMWeigher: weight of free memory. Positive spreads servers over the "
        "emptiest hosts, negative packs them onto the fullest, 0 ignores memory.",
    ),
    cfg.FloatOpt(
        "cpu_weight_multiplier",
        default=1.0,
        mutable=True,
        help="CPUWeigher: weight of free vCPUs (with their allocation ratio). Positive "
        "spreads, negative packs.",
    ),
    cfg.FloatOpt(
        "disk_weight_multiplier",
        default=1.0,
        mutable=True,
        help="DiskWeigher: weight of free disk. Positive spreads, negative packs.",
    ),
    cfg.FloatOpt(
        "soft_affinity_weight_multiplier",
        default=1.0,
        min=0.0,
        mutable=True,
        help="ServerGroupSoftAffinityWeigher: how strongly a member of a soft-affinity "
        "group is drawn to the hosts holding most of its group. 0 ignores the policy.",
    ),
    cfg.FloatOpt(
        "soft_anti_affinity_weight_multiplier",
        default=1.0,
        min=0.0,
        mutable=True,
        help="ServerGroupSoftAntiAffinityWeigher: how strongly a member of a "
        "soft-anti-affinity group is kept off the hosts holding its group. 0 ignores "
        "the policy.",
    ),
    cfg.FloatOpt(
        "build_failure_weight_multiplier",
        default=1000000.0,
        mutable=True,
        help="BuildFailureWeigher: how strongly a host whose last builds failed is "
        "avoided (the count resets on its next successful build). The default "
        "outweighs every other weigher, so a failing host is taken only when nothing "
        "else is left; lower it to let the others count too, 0 to ignore failures.",
    ),
    cfg.IntOpt(
        "host_subset_size",
        default=1,
        min=1,
        mutable=True,
        deprecated_opts=_moved("host_subset_size"),
        help="Pick the chosen host at random among this many of the best-weighed "
        "hosts (the others stay alternates, in order). 1 always takes the best. "
        "Several conductors scheduling at once see the same best host and race "
        "for it; a larger subset spreads them over hosts of nearly equal standing, "
        "so fewer claims are refused and retried, at the cost of a choice that is "
        "a little less than the best. A source host that needs nothing more is "
        "always kept first.",
    ),
]
