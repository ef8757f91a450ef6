"""What a simulation run is made of (importable without Placement installed)."""

from dataclasses import dataclass

STRATEGIES = ("legacy", "drop_and_reclaim", "max_flavor")
#: What the workers do: resize only, or also drain the busiest hosts.
WORKLOADS = ("resize", "drain")
#: The utilisations a default run sweeps: from where every strategy does as
#: well as the oracle to where same-host-full cases are common.
UTILISATIONS = (0.7, 0.8, 0.9, 0.95, 0.97)
#: Seeds per utilisation in a default run (consecutive, from ``Settings.seed``).
SEEDS = 3


@dataclass(frozen=True)
class Settings:
    """What a run is made of; equal settings give equal counts."""

    hosts: int = 12
    resizes: int = 30
    workers: int = 4
    utilisation: float = 0.9
    revert_ratio: float = 0.3
    seed: int = 1
    verify_turns: int = 6
    sweep_every: int = 10
    #: ``resize``, or ``drain``: the busiest hosts are disabled and their
    #: servers cold-migrated off while the other workers resize
    workload: str = "resize"
    #: hosts drained (the busiest first), with ``workload = drain``
    drain_hosts: int = 1
    #: workers that migrate (then resize), with ``workload = drain``
    drain_workers: int = 2
