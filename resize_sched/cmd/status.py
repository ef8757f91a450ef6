"""``resize-sched-status``: is this deployment ready to run (or to be upgraded)?

    resize-sched-status [--config-file FILE] upgrade check [--json]

Built on oslo.upgradecheck, like ``nova-status``. It reads the same config
file as the services and changes nothing. The checks themselves, what each
looks at and what its warnings and failures mean, are
:mod:`resize_sched.checks.upgrade`'s. Exit codes are oslo.upgradecheck's: 0
every check passed, 1 a warning, 2 a failure, 255 a check could not run at
all (a traceback is printed); a usage error exits 2 as well, as argparse does.
"""

import sys
from collections.abc import Sequence
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging
from oslo_upgradecheck import upgradecheck

from resize_sched import conf as rs_conf
from resize_sched.checks.upgrade import PROJECT, Checks, one_line
from resize_sched.version import version_string

LOG = logging.getLogger(__name__)

PROG = "resize-sched-status"
DESCRIPTION = (
    "Check that this resize_sched deployment is ready to run: run 'upgrade check' after "
    "installing new code (and 'resize-sched-manage db sync'), before restarting the "
    "services. It checks that the database schema is at the newest revision, that "
    "Placement answers at the microversion resize_sched needs, that the resource "
    "provider of every compute host with servers exists and carries this deployment's "
    "owner trait, that no migration is stuck in flight for longer than [conductor] "
    "stuck_after, that [resize] claim_strategy is installed, that every flavor's extra "
    "specs are accepted, that the policy file "
    "parses and names only rules that exist, and, with [quota] driver = unified_limits, "
    "that Keystone's limits can be read and every resource has one. Nothing is changed. "
    "Exit codes: 0 all passed; 1 a warning; 2 a failure; 255 a check could not run."
)


class _StatusConf(cfg.ConfigOpts):
    """Our options, parsed with the prog, description and version ``--help`` shows.

    ``upgradecheck.main`` parses the command line itself and passes only the
    project; this fills in what it leaves out.
    """

    def __call__(self, args: Sequence[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("prog", PROG)
        kwargs.setdefault("description", DESCRIPTION)
        kwargs.setdefault("version", version_string())
        super().__call__(args, **kwargs)


def new_conf() -> cfg.ConfigOpts:
    """A ConfigOpts with every resize_sched option (and oslo.log's) registered."""
    conf = _StatusConf()
    logging.register_options(conf)
    rs_conf.register_opts(conf)
    return conf


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``resize-sched-status``.

    :param argv: the arguments, without the program name; ``sys.argv[1:]``
        when None.
    :returns: the exit code (see the module's docstring).
    """
    conf = new_conf()
    # NOTE: the table goes to stdout; logs (a Placement retry, say) to stderr.
    conf.set_default("use_stderr", True)
    conf.set_default("default_log_levels", [*logging.get_default_log_levels(), "alembic=WARN"])
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        return upgradecheck.main(conf, project=PROJECT, upgrade_command=Checks(conf), argv=args)
    except SystemExit as exc:  # --help, --version, or a usage error already shown
        return exc.code if isinstance(exc.code, int) else 0
    except cfg.Error as exc:
        print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
