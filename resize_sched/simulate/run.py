"""One strategy's run: the same seeded cluster and resizes, the real code paths.

For each utilisation and strategy :func:`run` starts a fresh embedded
Placement and SQLite database, copied from the seeded starting state
(:class:`Template`, built once per utilisation and seed with
:mod:`~resize_sched.simulate.cluster`), and lets ``workers`` worker threads
take the seeded arrivals in turn (:mod:`~resize_sched.simulate.interleave`)
under the settings' workload (:data:`WORKLOADS`: the resizes of
:mod:`~resize_sched.simulate.workload`, or the drain of
:mod:`~resize_sched.simulate.drain`).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from resize_sched import conf as rs_conf
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient, owner_trait
from resize_sched.placement.embedded import PlacementInProcess
from resize_sched.simulate import cluster, drain
from resize_sched.simulate.interleave import Interleaver
from resize_sched.simulate.settings import Settings
from resize_sched.simulate.workload import Arrival, Outcome, ResizeRun, draw_arrivals

__all__ = ["Arrival", "Outcome", "RunResult", "Template", "WORKLOADS", "draw_arrivals", "run"]

#: Settings.workload -> the shared state its workers run.
WORKLOADS: dict[str, type[ResizeRun]] = {"resize": ResizeRun, "drain": drain.DrainRun}


@dataclass
class RunResult:
    """A strategy's run at one utilisation."""

    strategy: str
    settings: Settings
    hosts: int
    servers: int
    start_utilisation: float
    outcomes: list[Outcome] = field(default_factory=list)
    #: arrival of a failed restore -> arrivals until the sweep healed it (None: never)
    heals: dict[int, int | None] = field(default_factory=dict)
    turns: int = 0
    #: the drain workload's moves and what they left (None: the resize workload)
    drain: Any = None

    def to_json(self) -> dict[str, Any]:
        extra = {"drain": self.drain.to_json()} if self.drain is not None else {}
        return {
            **extra,
            "strategy": self.strategy,
            "settings": asdict(self.settings),
            "hosts": self.hosts,
            "servers": self.servers,
            "start_utilisation": round(self.start_utilisation, 4),
            "heals": {str(arrival): n for arrival, n in sorted(self.heals.items())},
            "outcomes": [
                {
                    **asdict(o),
                    "feasible": o.feasible,
                    "same_host_full": o.same_host_full,
                    "succeeded": o.succeeded,
                }
                for o in self.outcomes
            ],
        }


def _scratch_root() -> str | None:
    """Where the run's two SQLite files go: memory-backed when the machine has it.

    Every commit of both databases is otherwise a disk flush; the files are
    scratch, removed at the end of the run.
    """
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class Template:
    """The seeded starting state, built once and copied for every strategy.

    Use as a context manager: the files are removed at the end.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        rng = random.Random(settings.seed)
        self.layout = cluster.pack(rng, settings.hosts, settings.utilisation)
        self.arrivals = draw_arrivals(rng, settings, len(self.layout.servers))
        self.dir = tempfile.mkdtemp(prefix="resize-sched-simulate-", dir=_scratch_root())
        self.flavors: dict[str, str] = {}

    def __enter__(self) -> Template:
        try:
            with PlacementInProcess(f"{self.dir}/placement") as placement:
                conf = _conf(placement)
                db = Database(f"sqlite:///{self.dir}/resize_sched.sqlite")
                try:
                    db.sync()
                    owner = owner_trait(conf.placement.deployment_name)
                    rows = cluster.build(self.layout, PlacementClient.from_conf(conf), db, owner)
                finally:
                    db.dispose()
            self.flavors = {name: row.flavorid for name, row in rows.items()}
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def copy_to(self, path: str) -> None:
        """The starting state's two database files, into ``path``."""
        os.makedirs(f"{path}/placement")
        shutil.copyfile(f"{self.dir}/placement/placement.db", f"{path}/placement/placement.db")
        shutil.copyfile(f"{self.dir}/resize_sched.sqlite", f"{path}/resize_sched.sqlite")


def _conf(placement: PlacementInProcess) -> Any:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    placement.configure(conf)
    return conf


def run(
    template: Template, strategy: str, progress: Callable[[], None] = lambda: None
) -> RunResult:
    """Run the seeded resizes of ``template`` under ``strategy``, from a copy of its state.

    :param progress: called after each resize.
    :returns: every resize's outcome and the heals.
    """
    settings = template.settings
    with tempfile.TemporaryDirectory(prefix="resize-sched-simulate-", dir=_scratch_root()) as tmp:
        template.copy_to(tmp)
        with PlacementInProcess(f"{tmp}/placement") as placement:
            conf = _conf(placement)
            conf.set_override("claim_strategy", strategy, group="resize")
            db = Database(f"sqlite:///{tmp}/resize_sched.sqlite")
            try:
                interleaver = Interleaver(random.Random(f"turns-{settings.seed}"))
                state = WORKLOADS[settings.workload](
                    settings,
                    conf,
                    db,
                    template.layout,
                    template.flavors,
                    template.arrivals,
                    interleaver,
                    progress,
                    placement.db_path,
                )
                names = [f"worker{i}" for i in range(settings.workers)]
                for name in names:
                    interleaver.expect(name)
                threads = [
                    threading.Thread(target=state.work, args=(name,), name=f"simulate-{name}")
                    for name in names
                ]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                if state.crashed:
                    raise state.crashed[0]
                state.sweep(settings.resizes + 1)
                drained = state.finished()
            finally:
                db.dispose()
    return RunResult(
        strategy,
        settings,
        settings.hosts,
        len(template.layout.servers),
        template.layout.utilisation(),
        sorted(state.outcomes, key=lambda o: o.arrival),
        state.heals,
        interleaver.turns,
        drained,
    )
