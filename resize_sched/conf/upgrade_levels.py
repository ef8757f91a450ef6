"""Options of the ``[upgrade_levels]`` group: RPC version caps for rolling upgrades."""

import copy

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "upgrade_levels",
    title="RPC version caps",
    help="During a rolling upgrade, cap the RPC version each client sends so that "
    "services not yet upgraded still understand it. Remove the caps once every "
    "service runs the new release.",
)

OPTS = [
    cfg.StrOpt(
        "conductor",
        help="Highest conductor RPC API version to send, e.g. '1.0'. Unset: the "
        "newest this release knows.",
    ),
    cfg.StrOpt(
        "compute",
        help="Highest compute RPC API version to send, e.g. '1.0'. Unset: the "
        "newest this release knows.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # NOTE: a copy per ConfigOpts: oslo.config keeps overrides in the group
    # object, so a shared module-level group would leak them between configs.
    conf.register_group(copy.deepcopy(GROUP))
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS}
