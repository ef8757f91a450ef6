"""Options of the ``[conductor]`` group."""

import copy

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "conductor",
    title="Conductor options",
    help="The conductor daemon, which runs build and resize task flows.",
)

OPTS = [
    cfg.IntOpt(
        "workers",
        min=1,
        sample_default="<number of CPUs>",
        help="Conductor worker processes, each an RPC server on the same topic "
        "sharing the broker and the database. Defaults to the number of CPUs. "
        "Raise it when resizes queue up; each worker holds its own Placement and "
        "database connections.",
    ),
    cfg.IntOpt(
        "stuck_check_interval",
        default=60,
        min=0,
        help="Seconds between sweeps for resizes and builds that stopped moving: "
        "a message lost with a broker restart, or Placement down when a step ran. "
        "Each sweep takes them on exactly as crash recovery does at start. 0 "
        "disables the sweep (recovery still runs at start).",
    ),
    cfg.IntOpt(
        "stuck_after",
        default=300,
        min=1,
        help="Seconds a resize or build may stay in one in-flight state before a sweep "
        "takes it on. Keep it well above the slowest prep/resize/finish of your "
        "hypervisors, or the sweep re-sends steps that are merely slow (harmless "
        "but noisy: compute operations are idempotent).",
    ),
    cfg.IntOpt(
        "reap_after",
        default=600,
        min=0,
        help="Seconds after a server is deleted, or a resize ends, before the sweep "
        "gives back what this deployment's hosts still hold in Placement for it. "
        "Such an allocation is a write that reached Placement late: sent before the "
        "delete, held up in a slow Placement after the client timed out, and "
        "accepted once the delete had released everything. Keep it above the "
        "longest a Placement request can take with its retries (``[placement] "
        "timeout`` times the attempts), so that one pass finds the late writes; "
        "lower it to have the room back sooner.",
    ),
    cfg.IntOpt(
        "reap_interval",
        default=600,
        min=1,
        help="Seconds between two passes of the sweep's reaper (see reap_after). Each "
        "pass reads the allocations of every host of this deployment from Placement "
        "(one request per host): raise it for a large deployment, lower it to find "
        "late writes sooner. The first pass runs this long after the conductor "
        "starts; the sweep must be on (stuck_check_interval above 0).",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    # NOTE: a copy per ConfigOpts: oslo.config keeps overrides in the group
    # object, so a shared module-level group would leak them between configs.
    conf.register_group(copy.deepcopy(GROUP))
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS}
