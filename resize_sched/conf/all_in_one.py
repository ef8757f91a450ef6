"""Options of the ``[all_in_one]`` group: the single-process deployment."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "all_in_one",
    title="All-in-one options",
    help="resize-sched-all-in-one runs a real Placement, the API, one conductor and "
    "several fake compute hosts in one process, on the in-memory transport and "
    "SQLite. For demos, development and evaluation; not for production.",
)

OPTS = [
    cfg.PortOpt(
        "placement_port",
        default=8778,
        help="Port the embedded Placement listens on (on [api] bind_host). 0 picks a "
        "free port, logged at start.",
    ),
    cfg.ListOpt(
        "hosts",
        default=["compute1:8:16384:500:4", "compute2:8:16384:500:4"],
        help="The fake compute hosts to run, each NAME:VCPUS:MEMORY_MB:DISK_GB[:PCPUS]. "
        "VCPUS is the host's VCPU inventory (shared CPUs); PCPUS, when given, adds "
        "that many dedicated CPUs as PCPU inventory for flavors with "
        "hw:cpu_policy=dedicated or mixed ([compute] cpu_shared_set and "
        "cpu_dedicated_set are set to match; 0 or left out: no PCPU). Make one host "
        "as large as a flavor to reproduce a full host.",
    ),
    cfg.StrOpt(
        "state_path",
        help="Directory holding the all-in-one's SQLite files (Placement's and ours). "
        "Unset: a fresh temporary directory, removed at exit. Set it to keep state: an "
        "all-in-one restarted on the same directory after a crash resumes from it and "
        "recovers resizes that were in flight.",
    ),
]
