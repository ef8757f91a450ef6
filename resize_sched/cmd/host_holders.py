"""What still holds a host: the report of ``resize-sched-manage host holders``.

An operator draining a host (to take it down for maintenance) disables it,
moves its servers away, and then needs to know whether anything is left:
servers recorded on it, moves in flight that start or end there (their
migration records hold room on it until confirmed or reverted), and
allocations in Placement on its providers, each named by whose it is. The
host is empty when all three are.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.placement.client import PlacementClient
from resize_sched.scheduler import hosts


@dataclass
class Holders:
    """What holds one host."""

    host: str
    servers: list[Any] = field(default_factory=list)
    migrations: list[Any] = field(default_factory=list)
    #: (provider name, consumer uuid, what it is, its resources there)
    allocations: list[tuple[str, str, str, dict[str, int]]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Nothing holds the host: it may be taken down."""
        return not (self.servers or self.migrations or self.allocations)

    def lines(self) -> Iterator[str]:
        """The report, one item a line, then the verdict."""
        yield f"servers on {self.host}: {len(self.servers)}"
        for server in self.servers:
            task = f"/{server.task_state}" if server.task_state else ""
            yield f"  server {server.uuid} {server.name} {server.status}{task}"
        yield f"moves in flight from or to {self.host}: {len(self.migrations)}"
        for m in self.migrations:
            yield (
                f"  migration {m.uuid} ({m.migration_type}) server={m.server_uuid} "
                f"status={m.status} {m.source_host}->{m.dest_host or '-'}"
            )
        yield f"allocations in Placement on {self.host}: {len(self.allocations)}"
        for provider, consumer, what, resources in self.allocations:
            yield f"  {provider}: {consumer} ({what}) {rs.format_resources(resources)}"
        if self.empty:
            yield f"{self.host} is empty: nothing holds it."
        else:
            yield (
                f"{self.host} is still held: migrate its servers away, confirm or revert "
                "the moves, then run this again."
            )


def holders(db: Any, client: PlacementClient, owner_trait: str, host: str) -> Holders:
    """Read what holds ``host`` from our database and Placement (reads only).

    :raises NotFound: no provider of this deployment has that name.
    """
    root = hosts.find_host(client, owner_trait, host)
    found = Holders(host)
    found.servers = db.server_list(host=host)
    found.migrations = [
        m
        for m in db.migration_list(statuses=states.IN_FLIGHT_STATUSES)
        if host in (m.source_host, m.dest_host)
    ]
    servers = {s.uuid for s in db.server_list()}
    migrations = {m.uuid: m for m in db.migration_list(statuses=states.IN_FLIGHT_STATUSES)}
    for provider in client.list_resource_providers(in_tree=root["uuid"]):
        held = client.get_provider_allocations(provider["uuid"])
        for consumer, resources in sorted(held.items()):
            if consumer in servers:
                what = "server"
            elif consumer in migrations:
                what = f"migration of server {migrations[consumer].server_uuid}"
            else:
                what = "not a server or move of ours"
            found.allocations.append((provider["name"], consumer, what, resources))
    return found
