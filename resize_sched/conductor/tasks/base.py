"""What every task needs, bundled once per conductor worker."""

from dataclasses import dataclass

from oslo_config import cfg

from resize_sched import strategies
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.placement.executor import TransitionExecutor
from resize_sched.scheduler.manager import Scheduler
from resize_sched.strategies import ClaimStrategy


@dataclass
class TaskDeps:
    """The configuration and clients a task uses.

    A migration always names the strategy it started with, which may differ
    from ``[resize] claim_strategy`` after a reload; both are loaded through
    :func:`resize_sched.strategies.get`.
    """

    conf: cfg.ConfigOpts
    db: Database
    client: PlacementClient
    scheduler: Scheduler
    executor: TransitionExecutor

    @classmethod
    def build(cls, conf: cfg.ConfigOpts, db: Database, client: PlacementClient) -> "TaskDeps":
        """Wire the scheduler and executor around ``db`` and ``client``."""
        return cls(
            conf=conf,
            db=db,
            client=client,
            scheduler=Scheduler(client, conf, db),
            executor=TransitionExecutor(
                client, db, conflict_retries=conf.placement.generation_conflict_retries
            ),
        )

    def strategy(self, name: str) -> ClaimStrategy:
        """The strategy called ``name`` (StrategyNotFound if not installed)."""
        return strategies.get(name)

    def configured_strategy(self) -> ClaimStrategy:
        """The strategy new resizes use, from ``[resize] claim_strategy``."""
        return strategies.configured(self.conf)
