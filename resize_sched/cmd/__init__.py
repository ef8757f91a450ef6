"""Console scripts, one module per command, each with a short ``main()``.

Importing this package (every console script's entry point is a
``resize_sched.cmd`` module) first keeps third-party deprecation warnings
off the operator's console (:mod:`resize_sched.cmd.warnings_to_log`),
before any dependency is imported. :func:`setup_logging` sets up each
command's logging; :func:`parse_or_exit_code` reads the command line and
configuration files the way every command that answers with an exit code
does; :func:`settle_heap` is what each daemon does once it has started.
"""

from resize_sched.cmd import warnings_to_log

warnings_to_log.install()

import gc  # noqa: E402 - after the warnings are routed
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402

from oslo_config import cfg  # noqa: E402
from oslo_log import log as logging  # noqa: E402

from resize_sched import conf as rs_conf  # noqa: E402

LOG = logging.getLogger(__name__)


def setup_logging(conf: cfg.ConfigOpts) -> None:
    """Set up the command's logging from ``conf`` (oslo.log), then log the
    third-party warnings raised before it was (at DEBUG: seen with ``--debug``)."""
    logging.setup(conf, "resize_sched")
    warnings_to_log.replay()


def settle_heap() -> None:
    """Once a daemon has started: collect the garbage start-up left, then
    move every object still alive (modules, configuration, mappings, pools)
    into the collector's permanent generation (:func:`gc.freeze`).

    Python's cyclic collector otherwise walks all of them again at every
    full collection, a pause of tens of milliseconds in the middle of a
    request once the heap is large (the scheduler's 1,000 candidates per
    request trigger one every few requests); objects made after this are
    collected as before.
    """
    gc.collect()
    gc.freeze()
    LOG.debug("%d objects from start-up set apart from the collector", gc.get_freeze_count())


def parse_or_exit_code(
    conf: cfg.ConfigOpts,
    argv: Sequence[str] | None,
    description: str,
    error: Callable[[cfg.Error], int],
) -> int | None:
    """Parse ``argv`` (``sys.argv[1:]`` when None) and the configuration files
    into ``conf``.

    :returns: None when parsed; else the exit code to end with: 0 after
        ``--help`` or ``--version``, 1 after a usage error argparse has
        already shown, or what ``error`` returns for a bad option or file
        (it prints the one line the operator sees).
    """
    try:
        rs_conf.parse_args(
            conf, sys.argv[1:] if argv is None else list(argv), description=description
        )
    except SystemExit as exc:  # --help, --version, or a usage error already shown
        return 0 if exc.code in (0, None) else 1
    except cfg.Error as exc:
        return error(exc)
    return None
