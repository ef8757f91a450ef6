"""Options of the ``[conductor]`` group."""

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
        help="Seconds between two passes of the sweep's reaper (see reap_after). A "
        "pass reads, with one Placement request each, the servers deleted and the "
        "resizes ended since the previous pass, and gives back what a late write "
        "left them: its cost follows the deletes, not the number of hosts. Lower it "
        "to have the room back sooner. The sweep must be on (stuck_check_interval "
        "above 0).",
    ),
    cfg.IntOpt(
        "reap_scan_interval",
        default=86400,
        min=0,
        help="Seconds between two scans of every provider of this deployment (its "
        "hosts, their children and the sharing pools), one Placement request per "
        "provider, which give back what deleted servers and ended resizes of ours "
        "still hold there whatever the time they were deleted: the safety net for "
        "what the reaper's passes cannot know of (a database restored from a "
        "backup, a reap_after that was too short). 0 disables it; "
        "'resize-sched-manage placement audit' lists the same on demand. On a large "
        "deployment keep it at a day or more (10,000 hosts: about 10,000 requests "
        "and a minute and a half a scan).",
    ),
    cfg.IntOpt(
        "lease_duration",
        default=180,
        min=2,
        help="Seconds one conductor holds the sweep (and its reaper) for the whole "
        "deployment. Of all the conductor hosts and workers, only the holder of "
        "this lease sweeps; it renews the lease at every sweep, and another "
        "conductor takes it over once it has not been renewed for this long, so "
        "the sweep of a conductor that died moves to a survivor within "
        "lease_duration + stuck_check_interval seconds. Keep it above twice "
        "stuck_check_interval, and the hosts' clocks in step to well within it.",
    ),
]
