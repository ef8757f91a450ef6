"""``resize-sched-all-in-one``: Placement, API, conductor and fake compute
hosts in one process (see :mod:`resize_sched.all_in_one`). Serves until
SIGTERM or SIGINT; SIGHUP reloads mutable options such as
``[resize] claim_strategy``.

Its log (one line per API request among the rest) goes to ``all-in-one.log``
in the state path unless ``--log-file``, ``--log-dir`` or ``use_stderr`` says
otherwise, so that stdout holds only the banner: the endpoints, the
``export`` lines for the CLIs and the ``--config-file`` arguments for
``resize-sched-status`` and ``resize-sched-manage``.
"""

import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception

LOG = logging.getLogger(__name__)

PROG = "resize-sched-all-in-one"
DESCRIPTION = (
    "Run a real Placement (SQLite), the Compute API subset, a conductor and fake "
    "compute hosts ([all_in_one] hosts) in one process on the in-memory transport. "
    "For demos, development and evaluation."
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the all-in-one until SIGTERM or SIGINT."""
    conf = rs_conf.new_conf()
    # NOTE: the all-in-one is a local toy: listen on loopback and use noauth2
    # unless the config file says otherwise.
    conf.set_default("bind_host", "127.0.0.1", group="api")
    conf.set_default("auth_strategy", "noauth2", group="api")
    rs_conf.parse_args(
        conf, sys.argv[1:] if argv is None else list(argv), description=DESCRIPTION, prog=PROG
    )
    from resize_sched import all_in_one

    missing = all_in_one.missing_modules()
    if missing:
        print(f"{PROG}: {all_in_one.install_hint(missing)}", file=sys.stderr)
        return 1
    try:
        # NOTE: built before logging is set up: it chooses the state path,
        # where the log goes. Nothing is started yet.
        service = all_in_one.AllInOne(conf)
    except exception.ResizeSchedException as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    log_path = _log_to_state_path(conf, service.state_path)
    logging.setup(conf, "resize_sched")

    stopped = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        LOG.info("Caught %s, stopping", signal.Signals(signum).name)
        stopped.set()

    def _reload(signum: int, frame: object) -> None:
        LOG.info("Caught SIGHUP, reloading mutable options")
        conf.mutate_config_files()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _reload)
    try:
        service.start()
    except (exception.ResizeSchedException, OSError, ValueError) as exc:
        LOG.error("%s", exc)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    print(f"Compute API: {service.api_endpoint}  (X-Auth-Token: admin:admin)", flush=True)
    print(f"Placement:   {service.placement.endpoint}  (X-Auth-Token: admin)", flush=True)
    print(f"Identity:    {service.identity_endpoint}  (a development stand-in)", flush=True)
    print(f"Image:       {service.image_endpoint}  (a development stand-in)", flush=True)
    print(
        f"openstack (clouds {service.ADMIN_CLOUD} and {service.MEMBER_CLOUD} in "
        f"{service.clouds_yaml}; e.g. 'openstack server list'):",
        flush=True,
    )
    for line in service.export_lines():
        print(f"    {line}", flush=True)
    print("nova (which reads no clouds.yaml):", flush=True)
    print(f"    source {service.openrc[service.ADMIN_CLOUD]}", flush=True)
    config_args = shlex.join(service.tool_config_args())
    print("resize-sched-status and resize-sched-manage:", flush=True)
    print(f"    resize-sched-status {config_args} upgrade check", flush=True)
    print(f"    resize-sched-manage {config_args} placement audit", flush=True)
    if log_path:
        print(f"Log:         {log_path}", flush=True)
    try:
        stopped.wait()
    finally:
        service.stop()
    LOG.info("%s stopped", PROG)
    return 0


def _log_to_state_path(conf: cfg.ConfigOpts, state_path: str) -> str | None:
    """Send the log to a file in the state path unless the operator chose where it goes.

    :param conf: the parsed configuration (not yet used by logging.setup).
    :param state_path: the all-in-one's state directory.
    :returns: the log file's path, or None when the operator's choice stands.
    """
    if conf.log_file or conf.log_dir or conf.use_stderr:
        return None
    os.makedirs(state_path, exist_ok=True)
    from resize_sched.all_in_one import LOG_FILE

    path = os.path.join(state_path, LOG_FILE)
    conf.set_override("log_file", path)
    return path


if __name__ == "__main__":
    sys.exit(main())
