"""What every API handler is given (ApiState): configuration, database, clients.

The conductor's RPC client always; the Placement client on first use.
"""

from dataclasses import dataclass

from oslo_config import cfg

from resize_sched import strategies
from resize_sched.conductor.rpcapi import ConductorAPI
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient
from resize_sched.strategies import ClaimStrategy


@dataclass
class ApiState:
    """What the handlers use: configuration, database, conductor client.

    :ivar conf: the parsed configuration.
    :ivar db: the :class:`resize_sched.db.api.Database`.
    :ivar conductor: the conductor RPC client.
    """

    conf: cfg.ConfigOpts
    db: Database
    conductor: ConductorAPI
    _placement: PlacementClient | None = None

    def placement(self) -> PlacementClient:
        """The Placement client (os-services, os-hypervisors), built from
        ``[placement]`` on first use."""
        if self._placement is None:
            self._placement = PlacementClient.from_conf(self.conf)
        return self._placement

    def claim_strategy(self) -> ClaimStrategy:
        """The strategy new resizes use: ``[resize] claim_strategy`` now.

        :raises StrategyNotFound: it is not installed.
        """
        return strategies.configured(self.conf)
