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

import logging as std_logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.cmd import settle_heap, setup_logging

if TYPE_CHECKING:
    from resize_sched.all_in_one import AllInOne

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
    setup_logging(conf)
    try:
        return _serve(conf, service, log_path)
    finally:
        # NOTE: the log file may be in the state path: closed (and flushed)
        # before the directory goes, so that nothing logs into a removed file.
        _detach_logs(service.state_path)
        service.remove_state()


def _serve(conf: cfg.ConfigOpts, service: "AllInOne", log_path: str | None) -> int:
    """Start the all-in-one, print how to use it, serve until SIGTERM or SIGINT.

    :returns: the exit code: 0 after a clean stop, 1 when it cannot start.
    """
    from resize_sched.api.server import ListenError

    stopped = threading.Event()
    caught: list[str] = []

    def _stop(signum: int, frame: object) -> None:
        caught.append(signal.Signals(signum).name)
        stopped.set()

    def _reload(signum: int, frame: object) -> None:
        LOG.info("Caught SIGHUP, reloading mutable options")
        conf.mutate_config_files()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _reload)
    try:
        service.start(remove_state=False)
    except (exception.ResizeSchedException, ListenError, OSError, ValueError) as exc:
        LOG.error("%s", exc)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    if stopped.is_set():
        service.stop(remove_state=False)
        _say_stopped(service, caught)
        return 0
    _print_banner(service, log_path)
    settle_heap()
    try:
        stopped.wait()
    finally:
        service.stop(remove_state=False)
    _say_stopped(service, caught)
    return 0


def _say_stopped(service: "AllInOne", caught: list[str]) -> None:
    """Log and print that the all-in-one stopped, and what became of its state."""
    why = f" on {caught[0]}" if caught else ""
    if service.conf.all_in_one.state_path is None:
        state = f"its temporary state directory {service.state_path} is removed"
    else:
        state = f"its state stays in {service.state_path}"
    LOG.info("%s stopped%s; %s", PROG, why, state)
    print(f"{PROG} stopped{why}; {state}.", flush=True)


def _print_banner(service: "AllInOne", log_path: str | None) -> None:
    """Print the endpoints and the lines that point the CLIs at them."""
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


def _detach_logs(state_path: str) -> None:
    """Flush, close and remove every log handler writing to a file under ``state_path``."""
    prefix = os.path.join(os.path.realpath(state_path), "")
    loggers = [std_logging.getLogger()] + [
        logger
        for logger in std_logging.Logger.manager.loggerDict.values()
        if isinstance(logger, std_logging.Logger)
    ]
    for logger in loggers:
        for handler in list(logger.handlers):
            filename = getattr(handler, "baseFilename", None)
            if filename and os.path.realpath(filename).startswith(prefix):
                handler.flush()
                handler.close()
                logger.removeHandler(handler)


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
