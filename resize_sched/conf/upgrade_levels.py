"""Options of the ``[upgrade_levels]`` group: RPC version caps for rolling upgrades."""

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
