"""``resize-sched-api``: the Compute API subset, served by waitress.

One process serving ``[api] bind_host``:``bind_port`` with ``[wsgi]
threads`` threads. SIGTERM and SIGINT stop it cleanly (requests in hand are
finished); SIGHUP reloads mutable options such as ``[resize]
claim_strategy``. For production, run :mod:`resize_sched.api.wsgi` under
uWSGI or Apache mod_wsgi instead (``doc/api-server.rst``).

The server is :func:`resize_sched.api.server.create_server`, the one the
all-in-one runs too: how it holds slow clients and refuses large bodies is
said there. A port it cannot listen on is one line on stderr naming the
options, and exit code 1.
"""

import signal
import sys
from collections.abc import Sequence
from types import FrameType

import oslo_messaging as messaging
import sqlalchemy as sa
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import checks, exception
from resize_sched import conf as rs_conf
from resize_sched.api import deploy, server
from resize_sched.cmd import settle_heap, setup_logging

LOG = logging.getLogger(__name__)

PROG = "resize-sched-api"
DESCRIPTION = (
    "Serve the resize_sched Compute API v2.1 subset (flavors, servers, resize, "
    "confirmResize, revertResize, os-migrations) that openstacksdk and "
    "python-novaclient use. It records requests in the database ([database] "
    "connection) and casts them to the conductor over [DEFAULT] transport_url; it "
    "listens on [api] bind_host:bind_port and authenticates with [api] auth_strategy."
)


def _install_signal_handlers(conf: cfg.ConfigOpts) -> None:
    def _stop(signum: int, frame: FrameType | None) -> None:
        LOG.info("Caught %s, stopping", signal.Signals(signum).name)
        # NOTE: waitress's loop ends on SystemExit and lets the worker
        # threads finish the requests they hold.
        raise SystemExit(0)

    def _reload(signum: int, frame: FrameType | None) -> None:
        LOG.info("Caught SIGHUP, reloading mutable options")
        checks.reload_config(conf)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _reload)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the API until SIGTERM or SIGINT.

    :param argv: the arguments, without the program name; ``sys.argv[1:]``
        when None.
    :returns: the exit code: 0 after a clean stop, 1 when it cannot start.
    :raises SystemExit: ``--help``, ``--version`` or a usage error (argparse).
    """
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, sys.argv[1:] if argv is None else list(argv), description=DESCRIPTION)
    setup_logging(conf)
    try:
        deployment = deploy.load(conf)
    except (
        exception.ConfigurationError,
        messaging.MessagingException,
        sa.exc.ArgumentError,
    ) as exc:
        LOG.error("%s", exc)
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        try:
            http = server.create_server(conf, deployment.app, ident=PROG)
        except server.ListenError as exc:
            LOG.error("%s", exc)
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        _install_signal_handlers(conf)
        for host, port in server.listening(http):
            LOG.info("%s serving the Compute API at http://%s:%s/v2.1", PROG, host, port)
        if not conf.api.compute_link_prefix:
            LOG.warning(
                "[api] compute_link_prefix is not set: links are built from each "
                "request's Host header. Set it in production."
            )
        settle_heap()
        http.run()
        http.close()
        LOG.info("%s stopped", PROG)
        return 0
    finally:
        deployment.close()


if __name__ == "__main__":
    sys.exit(main())
