"""``resize-sched-compute``: one compute host with the fake hypervisor driver.

    resize-sched-compute --config-file /etc/resize_sched/resize_sched.conf

Registers ``[DEFAULT] host`` in Placement with the ``[compute]`` inventory,
serves the compute RPC API over ``[DEFAULT] transport_url`` and runs until
SIGTERM or SIGINT, then stops cleanly and exits 0. Exit code 1: bad
configuration, or the service could not start (Placement or the broker
unreachable: Placement is asked for ``GET /`` first, and one line says which
URL failed and how). Options the config files set that nothing knows are
logged as warnings.

NOTE: a plain signal loop rather than cotyledon. A compute host is a single
RPC server named after its host, so there is never more than one worker and
cotyledon's fork-and-supervise would only add a process to watch; systemd (or
any supervisor) restarts the service if it dies.
"""

import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType

from oslo_log import log as logging

from resize_sched import checks, exception
from resize_sched import conf as rs_conf
from resize_sched.cmd import parse_or_exit_code, settle_heap, setup_logging
from resize_sched.compute.service import ComputeService

LOG = logging.getLogger(__name__)

PROG = "resize-sched-compute"
DESCRIPTION = (
    "Run one compute host with the fake (in-memory) hypervisor driver. The host "
    "registers itself in Placement as the resource provider named [DEFAULT] host, with "
    "the VCPU, MEMORY_MB and DISK_GB inventory of the [compute] options, and serves the "
    "compute RPC API (topic 'compute', server=<host>) on [DEFAULT] transport_url. "
    "[fake_driver] fail_on makes chosen operations fail on purpose. Stop it with "
    "SIGTERM or SIGINT."
)

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _StopRequested(BaseException):
    """Raised in the main thread by the first SIGTERM/SIGINT.

    A BaseException so that no ``except Exception`` (say, in a broker
    connection retry loop during start) swallows it.
    """


def _request_stop(signum: int, frame: FrameType | None) -> None:
    # NOTE: further signals only log, so stop() is never interrupted halfway.
    for sig in _STOP_SIGNALS:
        signal.signal(sig, _already_stopping)
    raise _StopRequested(signal.Signals(signum).name)


def _already_stopping(signum: int, frame: FrameType | None) -> None:
    LOG.info("%s received; already stopping", signal.Signals(signum).name)


def _error(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run a compute host until SIGTERM or SIGINT.

    :param argv: the arguments, without the program name; ``sys.argv[1:]``
        when None.
    :returns: the exit code: 0 after a clean stop (or ``--help``), 1 on error.
    """
    conf = rs_conf.new_conf()
    code = parse_or_exit_code(conf, argv, DESCRIPTION, lambda exc: _error(str(exc)))
    if code is not None:
        return code
    setup_logging(conf)
    try:
        # NOTE: validates [compute] and [fake_driver] before anything starts.
        service = ComputeService(conf)
    except (exception.ConfigurationError, ValueError) as exc:  # ValueError: bad option value
        return _error(str(exc))
    conf.log_opt_values(LOG, logging.DEBUG)
    checks.warn_unknown_options(conf)
    problem = checks.placement_problem(conf)
    if problem:
        # NOTE: a host must register its provider before it can be scheduled
        # to; rather than wait, exit and let the supervisor restart it.
        LOG.error("Compute host %s could not start: %s", conf.host, problem)
        return _error(problem)

    previous = {sig: signal.signal(sig, _request_stop) for sig in _STOP_SIGNALS}
    try:
        try:
            service.start()
            settle_heap()
            while True:
                time.sleep(3600)
        except _StopRequested as stop:
            LOG.info("%s received; stopping compute host %s", stop, service.host)
        except Exception as exc:
            LOG.error("Compute host %s could not start: %s", service.host, exc)
            LOG.debug("Start failure", exc_info=True)
            return 1
        finally:
            for sig in _STOP_SIGNALS:
                signal.signal(sig, _already_stopping)
            service.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
