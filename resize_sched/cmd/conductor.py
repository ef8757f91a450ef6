"""``resize-sched-conductor``: the conductor daemon.

Runs ``[conductor] workers`` processes under cotyledon, each an RPC server on
the ``conductor`` topic sharing the broker and the database. The first worker
recovers resizes left in flight by a previous run before it serves. SIGTERM
stops every worker gracefully (the message in hand is finished); SIGHUP
reloads mutable options such as ``[resize] claim_strategy`` (a strategy that
is not installed is refused and the current one kept). At start, options the
config files set that nothing knows are logged as warnings, and a Placement
that does not answer is logged as an error (the conductor starts anyway).
"""

import os
import sys
from collections.abc import Sequence

import cotyledon
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import conf as rs_conf
from resize_sched import exception
from resize_sched.cmd import settle_heap, setup_logging

LOG = logging.getLogger(__name__)

DESCRIPTION = (
    "The resize_sched conductor: schedules builds and resizes, runs the configured "
    "Placement claim strategy and drives compute hosts over RPC."
)


class ConductorWorker(cotyledon.Service):
    """One worker process; builds its own connections after the fork."""

    name = "resize-sched-conductor"

    def __init__(self, worker_id: int, conf: cfg.ConfigOpts) -> None:
        super().__init__(worker_id)
        self.conf = conf
        self.worker_id = worker_id
        self.service = None

    def run(self) -> None:
        from resize_sched.conductor.service import ConductorService

        self.service = ConductorService(self.conf, recover=self.worker_id == 0)
        self.service.start()
        settle_heap()

    def reload(self) -> None:
        if self.service is not None:
            self.service.reload()

    def terminate(self) -> None:
        if self.service is not None:
            self.service.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the conductor until SIGTERM."""
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, sys.argv[1:] if argv is None else argv, description=DESCRIPTION)
    setup_logging(conf)
    conf.log_opt_values(LOG, logging.DEBUG)
    try:
        # NOTE: check the strategy here too, so a typo fails the command with
        # one clear line instead of a crash loop of workers.
        from resize_sched import strategies

        strategies.load(conf.resize.claim_strategy)
    except exception.ConfigurationError as exc:
        LOG.error("%s", exc)
        print(f"resize-sched-conductor: {exc}", file=sys.stderr)
        return 1
    from resize_sched import checks

    checks.warn_unknown_options(conf)
    problem = checks.placement_problem(conf)
    if problem:
        # NOTE: keep starting: steps that reach Placement fail and are left
        # in a state recovery and the sweep take on once it answers.
        LOG.error("%s; starting anyway, the sweep catches up once it answers", problem)
    workers = conf.conductor.workers or os.cpu_count() or 1
    LOG.info("Starting %d conductor worker(s)", workers)
    manager = cotyledon.ServiceManager()
    manager.add(ConductorWorker, workers=workers, args=(conf,))
    manager.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
