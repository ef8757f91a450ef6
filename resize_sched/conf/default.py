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
        help="The availability zone of a compute host in no aggregate that names "
        "one (Nova's option of the same name). Servers asked into this zone may "
        "land on such hosts; change it to name the zone of your unzoned hosts.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)


def list_opts() -> dict[str | None, list[cfg.Opt]]:
    return {"DEFAULT": OPTS}
