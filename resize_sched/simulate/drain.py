"""The drain workload: an operator empties the busiest hosts while resizes go on.

On the same seeded cluster as the resize workload, before any worker starts,
the ``drain_hosts`` busiest hosts (most used class first, then the host
name) are disabled as ``PUT /os-services`` disables a compute service: the
``COMPUTE_STATUS_DISABLED`` trait on the host's provider
(:func:`~resize_sched.scheduler.hosts.set_disabled`), then the service row's
``disabled`` flag. The first ``drain_workers`` workers then cold-migrate every
server of those hosts off, one after another, through the conductor's own
steps (:class:`~resize_sched.conductor.tasks.migrate.MigrateTask`: the API's
database step ``begin``, ``schedule``, ``finish``, a seeded number of turns
in VERIFY_RESIZE, ``confirm``), then join the others, which resize the rest
of the cluster from the first turn (the same seeded arrivals, drawn over
the servers of the hosts left enabled). Migrations and resizes interleave at
every Placement request, so they compete for the same room.

Each move is judged by the oracle at its first turn, from nothing the
strategies compute: it **fits** when some enabled host other than its own
has the server's flavor free on top of what it holds (``used + flavor <=
capacity``). A move that fits but failed is a **miss**. Disabled hosts are
no destination for anyone, so the resizes' oracle leaves them out too.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.migrate import MigrateTask
from resize_sched.placement.client import PlacementClient
from resize_sched.scheduler import hosts as rs_hosts
from resize_sched.simulate import cluster, oracle
from resize_sched.simulate.driver import MoveDriver
from resize_sched.simulate.workload import ResizeRun, Succeeded

#: The disabled reason recorded on the drained hosts' service rows.
REASON = "simulate: drained for maintenance"


@dataclass
class MoveOutcome(Succeeded):
    """What one cold migration off a drained host did."""

    index: int
    worker: str
    server: str
    flavor: str
    source: str
    #: the oracle: an enabled host other than the source had the flavor free
    fits: bool = False
    result: str = "error"  # ok, deferred, infeasible, restore refused, error: X
    dest: str | None = None
    #: the first claim was refused and an alternate (or a second query) took it
    rescheduled: bool = False
    contended: bool = False
    requests: int = 0

    @property
    def no_room(self) -> bool:
        """Refused by the scheduler (NoValidHost, either kind)."""
        return self.result in (exception.NoValidHost.DEFERRED, exception.NoValidHost.INFEASIBLE)


@dataclass
class DrainResult:
    """The moves of one run and what the drained hosts held at its end."""

    hosts: list[str]
    moves: list[MoveOutcome] = field(default_factory=list)
    #: drained host -> its usage in Placement at the end, class by class
    usage: dict[str, rs.Resources] = field(default_factory=dict)
    #: drained host -> servers our database still places there at the end
    left: dict[str, int] = field(default_factory=dict)
    #: every host -> its usage in Placement at the end
    all_usage: dict[str, rs.Resources] = field(default_factory=dict)
    #: every server -> (host, flavor name) as our database has it at the end
    placed: dict[str, tuple[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": self.hosts,
            "usage": self.usage,
            "left": self.left,
            "all_usage": self.all_usage,
            "placed": self.placed,
            "moves": [
                {**asdict(m), "succeeded": m.succeeded, "no_room": m.no_room} for m in self.moves
            ],
        }


def busiest(used: dict[str, rs.Resources], capacity: rs.Resources, count: int) -> list[str]:
    """The ``count`` hosts whose most used class is the most used, ties by name."""

    def share(host: str) -> float:
        return max(used[host].get(rc, 0) / total for rc, total in capacity.items())

    return sorted(used, key=lambda host: (-share(host), host))[:count]


class DrainRun(ResizeRun):
    """A run of the drain workload (see the module's docstring)."""

    def __init__(self, settings: Any, conf: Any, db: Any, layout: Any, *args: Any) -> None:
        super().__init__(settings, conf, db, layout, *args)
        count = max(1, min(settings.drain_hosts, len(layout.hosts) - 1))
        self.drained = busiest(layout.used(), cluster.HOST, count)
        self.drained_rps = {layout.host_uuids[host] for host in self.drained}
        on_drained = [server for server, host, _flavor in layout.servers if host in self.drained]
        # NOTE: the resizes take the servers of the enabled hosts only, and
        # the oracle counts no disabled host as room, for them or the moves.
        self.servers = [server for server in self.servers if server not in set(on_drained)]
        self.capacities = {
            rp: capacity for rp, capacity in self.capacities.items() if rp not in self.drained_rps
        }
        rng = random.Random(f"drain-{settings.seed}")
        self.to_move = [(server, rng.randint(0, settings.verify_turns)) for server in on_drained]
        self.next_move = 0
        self.moves: list[MoveOutcome] = []
        self.drainers = {f"worker{i}" for i in range(max(1, settings.drain_workers))}
        for host in self.drained:
            # NOTE: what PUT /os-services does to disable a compute service:
            # the provider's trait first, then the service row's flag.
            rs_hosts.set_disabled(self.observer, self.owner, host, True)
            service = self.db.service_get_by_host(host)
            self.db.service_set_disabled(service.uuid, True, REASON, expected_disabled=False)

    def _jobs(self, name: str, deps: TaskDeps, client: PlacementClient) -> None:
        if name not in self.drainers:
            return
        driver = MoveDriver(MigrateTask(deps), client, self.db)
        while self.next_move < len(self.to_move):
            server, verify_turns = self.to_move[self.next_move]
            self.next_move += 1
            self.busy.add(server)
            try:
                self.moves.append(self.migrate(name, driver, self.next_move, server, verify_turns))
            finally:
                self.busy.discard(server)

    def migrate(
        self,
        name: str,
        driver: MoveDriver,
        index: int,
        uuid: str,
        verify_turns: int,
    ) -> MoveOutcome:
        """One cold migration, as the conductor runs it (minus RPC and compute)."""
        server = self.db.server_get(uuid)
        flavor = rs.stored_request(server.flavor).resources
        outcome = MoveOutcome(index, name, uuid, server.flavor["name"], str(server.host))
        since: list[int] = []

        def snapshot() -> None:
            usages = oracle.usages(self.placement_db)
            outcome.fits = any(
                oracle.host_fits(capacity, usages.get(rp, {}), flavor)
                for rp, capacity in self.capacities.items()
                if rp != server.rp_uuid
            )
            since.append(self.interleaver.position())

        self.interleaver.at_next_turn(snapshot)
        migration = driver.begin(uuid)
        scheduled = driver.try_schedule(migration.uuid, "Cold migration", uuid)
        # NOTE: a restore refused leaves the server flagged needs_heal; the
        # sweep heals it (no resize takes it).
        outcome.result = scheduled.result
        if scheduled.returned:
            outcome.dest = scheduled.dest.host if scheduled.dest is not None else None
        outcome.requests = scheduled.requests
        outcome.rescheduled = bool(self.db.migration_get(migration.uuid).tried)
        outcome.contended = self._contended(name, since, f"cold migration of {uuid}")
        if outcome.result != "ok":
            return outcome
        driver.finish(migration.uuid)
        self._wait_turns(verify_turns)
        driver.decide(uuid, confirm=True)
        return outcome

    def finished(self) -> DrainResult:
        usages = oracle.usages(self.placement_db)
        on_host: dict[str, int] = dict.fromkeys(self.drained, 0)
        placed = {}
        for uuid, _host, _flavor in self.layout.servers:
            server = self.db.server_get(uuid)
            placed[uuid] = (str(server.host), server.flavor["name"])
            if server.host in on_host:
                on_host[server.host] += 1
        by_host = {h: usages.get(self.layout.host_uuids[h], {}) for h in self.layout.hosts}
        return DrainResult(
            list(self.drained),
            sorted(self.moves, key=lambda m: m.index),
            {host: by_host[host] for host in self.drained},
            on_host,
            by_host,
            placed,
        )
