"""Options of the ``[DEFAULT]`` group that belong to resize_sched.

oslo.messaging adds its own (``transport_url``, ``rpc_response_timeout``...)
when a transport is built; oslo.log adds the logging options.
"""

import socket

from oslo_config import cfg

OPTS = [
    cfg.StrOpt(
        "host",
        default=socket.gethostname(),
        sample_default="<current_hostname>",
        help="Name of this node. A compute service registers its resource provider "
        "under this name and receives RPC messages addressed to it, so it must be "
        "unique among compute hosts and stable across restarts. Conductor and API "
        "services use it only in logs.",
    ),
    cfg.StrOpt(
        "state_path",
        default="/var/lib/resize_sched",
        help="Directory where resize_sched keeps local state, such as the default "
        "SQLite database. Change it when running unprivileged or when several "
        "independent deployments share a machine.",
    ),
    cfg.IntOpt(
        "report_interval",
        default=10,
        min=1,
        help="Seconds between a service's heartbeats: a compute service's reports to "
        "the conductor (with the inventory it last set in Placement) and a conductor's "
        "own (os-services lists both). Keep it well below service_down_time.",
    ),
    cfg.IntOpt(
        "service_down_time",
        default=60,
        min=1,
        help="Seconds since its last report after which a service counts as down "
        "(os-services and os-hypervisors show state 'down'). Keep it well above "
        "report_interval.",
    ),
    cfg.StrOpt(
        "default_availability_zone",
        default="nova",
        help="The availability zone of a compute host that is in no aggregate with an "
        "availability_zone (os-availability-zone lists it; a server on such a host shows it "
        "as OS-EXT-AZ:availability_zone). A server asked into this zone lands only on such "
        "hosts. Change it to name your default zone as your users know it; it must not be "
        "the name of an aggregate's zone.",
    ),
    cfg.StrOpt(
        "default_schedule_zone",
        help="The availability zone a server created without one is placed in. Unset (the "
        "default): any host, whatever its zone. Set it to keep servers whose owners name no "
        "zone out of the zones you keep for those who do; it must be a zone that exists, or "
        "every create without a zone fails with 400.",
    ),
    cfg.StrOpt(
        "multi_instance_display_name_template",
        default="%(name)s-%(count)d",
        help="The name of each server when one POST /servers creates more than one "
        "(max_count), as Nova's option of the same name: a Python %-format with %(name)s "
        "(the name asked), %(count)d (1 for the first server, 2 for the next...) and "
        "%(uuid)s (the server's id). A template that does not format keeps the name "
        "asked.",
    ),
    cfg.IntOpt(
        "shelved_offload_time",
        default=0,
        min=-1,
        help="What happens to a shelved server's host, as Nova's option of the same name. "
        "0 (the default): the shelve offloads it at once (SHELVED_OFFLOADED: the host's room "
        "is given back in Placement). -1: never offloaded on its own; it stays SHELVED, "
        "holding its room, until shelveOffload or unshelve. N > 0: the conductor's sweep "
        "offloads a server that has been SHELVED, unchanged, for N seconds or more "
        "(checked every [conductor] stuck_check_interval).",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)


def list_opts() -> dict[str | None, list[cfg.Opt]]:
    return {"DEFAULT": OPTS}
