"""The resize workload: worker threads take the seeded resizes in turn, each run for real.

:func:`~resize_sched.simulate.run.run` starts ``workers`` threads on a
:class:`ResizeRun`; they take the seeded arrivals in turn
(:mod:`~resize_sched.simulate.interleave`). Each arrival is one resize, run
as the conductor runs it, minus RPC (:mod:`~resize_sched.simulate.driver`):

#. the oracle's snapshot (:mod:`~resize_sched.simulate.oracle`), within one
   turn, before anything is written;
#. ``begin`` (the API's database step), ``schedule`` (prepare, query, claim,
   alternates, or fail and restore), ``finish`` (the destination reports);
#. in VERIFY_RESIZE: what both consumers hold is read from Placement, then
   the worker waits a seeded number of turns while the others go on;
#. confirm, or revert at the set ratio. A revert Placement refuses (only a
   same-host ``drop_and_reclaim`` can be: someone took the room it freed)
   is counted, and the resize is confirmed instead, keeping the new flavor,
   as an operator would rather than leave the server waiting.

A restore Placement refuses leaves the server flagged ``needs_heal``; every
``sweep_every`` arrivals (and once after the last), the conductor's sweep
step for it runs (settle against Placement, then
:func:`~resize_sched.conductor.heal.restore_missing`), and how many arrivals
later it succeeded is recorded.
"""

from __future__ import annotations

import random
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.conductor import heal, recovery
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient, owner_trait
from resize_sched.simulate import cluster, oracle
from resize_sched.simulate.driver import MoveDriver
from resize_sched.simulate.interleave import Interleaver
from resize_sched.simulate.settings import Settings
from resize_sched.strategies import Holdings


@dataclass(frozen=True)
class Arrival:
    """One resize as drawn: which server (a slot in the server list), the
    seed of its new flavor, confirm or revert, and its VERIFY_RESIZE turns."""

    index: int
    slot: int
    flavor_seed: int
    revert: bool
    verify_turns: int


class Succeeded:
    """What a move's ``result`` means for the counts: ``ok`` alone succeeded."""

    result: str

    @property
    def succeeded(self) -> bool:
        return self.result == "ok"


@dataclass
class Outcome(Succeeded, oracle.Judged):
    """What one resize did, and what the oracle said of it."""

    arrival: int
    worker: str
    server: str
    old: str
    new: str
    source_fits: bool = False
    other_fits: bool = False
    source_free: bool = False
    result: str = "error"  # ok, deferred, infeasible, restore refused, error: X
    same_host: bool | None = None
    contended: bool = False
    schedule_requests: int = 0
    extra_held: dict[str, int] = field(default_factory=dict)
    decision: str | None = None
    revert_refused: bool = False
    decision_requests: int = 0


def draw_arrivals(rng: random.Random, settings: Settings, servers: int) -> list[Arrival]:
    """The seeded sequence of resizes (the same for every strategy)."""
    return [
        Arrival(
            index=i + 1,
            slot=rng.randrange(servers),
            flavor_seed=rng.getrandbits(32),
            revert=rng.random() < settings.revert_ratio,
            verify_turns=rng.randint(0, settings.verify_turns),
        )
        for i in range(settings.resizes)
    ]


class ResizeRun:
    """The shared state of one run of the resize workload: arrivals, busy servers, outcomes."""

    def __init__(
        self,
        settings: Settings,
        conf: Any,
        db: Database,
        layout: cluster.Layout,
        flavors: dict[str, Any],
        arrivals: list[Arrival],
        interleaver: Interleaver,
        progress: Callable[[], None],
        placement_db: str,
    ) -> None:
        self.settings = settings
        self.conf = conf
        self.db = db
        self.layout = layout
        self.flavors = flavors
        self.arrivals = list(arrivals)
        self.interleaver = interleaver
        self.progress = progress
        self.owner = owner_trait(conf.placement.deployment_name)
        self.placement_db = placement_db
        self.capacities = oracle.capacities(placement_db)
        self.servers = [server for server, _host, _flavor in layout.servers]
        self.busy: set[str] = set()
        self.outcomes: list[Outcome] = []
        self.flagged: dict[str, int] = {}
        self.heals: dict[int, int | None] = {}
        self.crashed: list[BaseException] = []
        self.next = 0
        # NOTE: the sweep's requests are never the strategies'.
        self.observer = interleaver.attach(PlacementClient.from_conf(conf), gated=False)
        self.sweep_deps = TaskDeps.build(conf, db, self.observer)

    # -- the workers' loop ------------------------------------------------------------

    def work(self, name: str) -> None:
        """The thread of worker ``name``; a crash is kept for :func:`run` to raise."""
        try:
            self._work(name)
        except BaseException as exc:  # raised again by run() once every thread ended
            self.crashed.append(exc)

    def _work(self, name: str) -> None:
        client = self.interleaver.attach(PlacementClient.from_conf(self.conf), gated=True)
        deps = TaskDeps.build(self.conf, self.db, client)
        driver = MoveDriver(ResizeTask(deps), client, self.db)
        # NOTE: what a conductor does once at start, not a resize's cost; done
        # lazily, legacy's side pool and the worker could both ask at once.
        _ = client.max_version
        deps.configured_strategy()
        with self.interleaver.worker(name):
            self._jobs(name, deps, client)
            self._resizes(name, driver)
            deps.scheduler.close()

    def _jobs(self, name: str, deps: TaskDeps, client: PlacementClient) -> None:
        """What worker ``name`` does before it takes resizes (a workload's own work)."""

    def _resizes(self, name: str, driver: MoveDriver) -> None:
        """Take the next arrival until none is left."""
        while self.next < len(self.arrivals):
            arrival = self.arrivals[self.next]
            self.next += 1
            if arrival.index % self.settings.sweep_every == 0:
                self.sweep(arrival.index)
            server = self._free_server(arrival.slot)
            if server is None:
                continue
            self.busy.add(server)
            try:
                self.outcomes.append(self.resize(name, driver, arrival, server))
            finally:
                self.busy.discard(server)
                self.progress()

    def _free_server(self, slot: int) -> str | None:
        count = len(self.servers)
        for step in range(count):
            server = self.servers[(slot + step) % count]
            if server not in self.busy and server not in self.flagged:
                return server
        return None

    # -- one resize -----------------------------------------------------------------

    def resize(self, name: str, driver: MoveDriver, arrival: Arrival, uuid: str) -> Outcome:
        server = self.db.server_get(uuid)
        old_name = server.flavor["name"]
        new_spec = cluster.draw_flavor(random.Random(arrival.flavor_seed), exclude=old_name)
        old = rs.stored_request(server.flavor).resources
        new = new_spec.resources
        source = server.rp_uuid
        outcome = Outcome(arrival.index, name, uuid, old_name, new_spec.name)
        since: list[int] = []

        def snapshot() -> None:
            # NOTE: at the start of the turn of the resize's first Placement
            # request: nothing of it is written yet, nobody else runs.
            verdict = oracle.judge(
                self.capacities, oracle.usages(self.placement_db), source, old, new
            )
            outcome.source_fits = verdict.source_fits
            outcome.other_fits = verdict.other_fits
            outcome.source_free = verdict.source_free
            since.append(self.interleaver.position())

        self.interleaver.at_next_turn(snapshot)
        migration = driver.begin(uuid, self.flavors[new_spec.name])
        scheduled = driver.try_schedule(migration.uuid, "Resize", uuid)
        outcome.result = scheduled.result
        if scheduled.result == "restore refused":
            self.flagged[uuid] = arrival.index
            self.heals[arrival.index] = None
        elif scheduled.returned:
            outcome.same_host = bool(scheduled.dest and scheduled.dest.same_host)
        outcome.schedule_requests = scheduled.requests
        outcome.contended = self._contended(name, since, f"resize of {uuid}")
        if outcome.result != "ok":
            return outcome
        driver.finish(migration.uuid)
        outcome.extra_held = self._extra_held(migration.uuid, new)
        self._wait_turns(arrival.verify_turns)
        decision = driver.revert_or_confirm(uuid, arrival.revert)
        outcome.decision = decision.decision
        outcome.revert_refused = decision.revert_refused
        outcome.decision_requests = decision.requests
        return outcome

    def _contended(self, name: str, since: list[int], what: str) -> bool:
        """Whether another worker ran between the move's first turn (in ``since``) and now."""
        if not since:  # pragma: no cover - every schedule asks Placement something
            raise RuntimeError(f"the {what} made no Placement request")
        return self.interleaver.contended(name, since[0])

    def _wait_turns(self, turns: int) -> None:
        """In VERIFY_RESIZE: let the other workers take ``turns`` turns."""
        for _ in range(turns):
            self.interleaver.turn()

    def _extra_held(self, migration: str, new: rs.Resources) -> dict[str, int]:
        """What both consumers hold beyond the running flavor ``new``, class by
        class: what the executor recorded writing (it is their one writer)."""
        held = Holdings.from_dict(self.db.migration_get(migration).holdings or {})
        held_total = rs.add(rs.total(held.server), rs.total(held.migration))
        return {
            rc: amount - new.get(rc, 0)
            for rc, amount in held_total.items()
            if amount > new.get(rc, 0)
        }

    def finished(self) -> Any:
        """What the workload reports beyond the resizes, once every worker ended."""
        return None

    # -- the sweep ---------------------------------------------------------------------

    def sweep(self, at: int) -> None:
        """The conductor's sweep step for failed restores: settle, then restore."""
        manager = types.SimpleNamespace(db=self.db, deps=self.sweep_deps)
        for migration in self.db.migration_list(statuses=["error"]):
            if not migration.missing:
                continue
            try:
                settled = recovery.reconcile(manager, migration, recovery.RecoveryReport())
                heal.restore_missing(self.db, self.sweep_deps.executor, settled, "restore")
            except exception.ClaimRefused:
                continue  # still no room; the next sweep tries again
            server = migration.server_uuid
            if server in self.flagged:
                flagged_at = self.flagged.pop(server)
                self.heals[flagged_at] = at - flagged_at
