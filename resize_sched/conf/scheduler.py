"""Options of the ``[scheduler]`` group: how destinations are chosen."""

import copy

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
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # NOTE: a copy per ConfigOpts: oslo.config keeps overrides in the group
    # object, so a shared module-level group would leak them between configs.
    conf.register_group(copy.deepcopy(GROUP))
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS}
