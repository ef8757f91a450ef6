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
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(OPTS)


def list_opts() -> dict[str | None, list[cfg.Opt]]:
    return {"DEFAULT": OPTS}
