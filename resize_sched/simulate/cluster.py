"""The simulated cluster: host size, flavor mix, and packing to a utilisation.

Everything here is drawn from one seeded :class:`random.Random`, so a seed
gives the same hosts, servers and placements every time. Hosts are registered
in Placement as a compute service registers its host (a provider with its
inventory and the deployment's owner trait) and reported in our database as
the compute service's report records them; servers are placed by writing
their allocations and rows directly, as a finished build leaves them, which
is much faster than building each one through the build flow.
"""

from __future__ import annotations

import logging
import random
import uuid as uuidlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from resize_sched import resources as rs
from resize_sched.db import states
from resize_sched.db.api import Database
from resize_sched.placement.client import INSTANCE, ConsumerWrite, PlacementClient

LOG = logging.getLogger(__name__)

#: One host: 16 cores, 64 GiB of memory, 640 GB of disk (4 GiB and 40 GB a core).
HOST = {rs.VCPU: 16, rs.MEMORY_MB: 65536, rs.DISK_GB: 640}

PROJECT = USER = "simulate"


@dataclass(frozen=True)
class FlavorSpec:
    """One flavor of the mix and how often it is drawn."""

    name: str
    vcpus: int
    memory_mb: int
    root_gb: int
    weight: int

    @property
    def resources(self) -> rs.Resources:
        return {rs.VCPU: self.vcpus, rs.MEMORY_MB: self.memory_mb, rs.DISK_GB: self.root_gb}


#: General-purpose flavors in the m1 proportions, most of them small, plus a
#: compute-heavy and a memory-heavy one, so that many resizes grow one class
#: and shrink another (where max(old, new) differs from new).
FLAVORS: tuple[FlavorSpec, ...] = (
    FlavorSpec("m1.small", 1, 2048, 20, 30),
    FlavorSpec("m1.medium", 2, 4096, 40, 25),
    FlavorSpec("m1.large", 4, 8192, 80, 15),
    FlavorSpec("m1.xlarge", 8, 16384, 160, 5),
    FlavorSpec("c1.large", 4, 4096, 40, 15),
    FlavorSpec("r1.large", 2, 16384, 80, 10),
)

#: Consumers per ``POST /allocations`` while placing servers.
_BATCH = 100


def inventory_records(host: Mapping[str, int] = HOST) -> dict[str, dict[str, Any]]:
    """Full inventory records for a host of that size, as a compute service sets them."""
    return rs.inventory_records(host)


def draw_flavor(rng: random.Random, exclude: str | None = None) -> FlavorSpec:
    """One flavor of the mix by weight, never ``exclude``."""
    choices = [f for f in FLAVORS if f.name != exclude]
    return rng.choices(choices, weights=[f.weight for f in choices])[0]


def seeded_uuid(rng: random.Random) -> str:
    """A version-4 uuid drawn from ``rng`` (reproducible, unlike uuid4)."""
    return str(uuidlib.UUID(int=rng.getrandbits(128), version=4))


def utilisation(used: Mapping[str, int], capacity: Mapping[str, int]) -> float:
    """The cluster's utilisation: the share used of its most used class."""
    return max(used.get(rc, 0) / total for rc, total in capacity.items() if total)


@dataclass
class Layout:
    """Where each server runs before the first resize (no Placement involved).

    :ivar hosts: host names, in registration order.
    :ivar servers: ``(server uuid, host name, flavor name)``, in placement order.
    """

    hosts: list[str]
    servers: list[tuple[str, str, str]] = field(default_factory=list)
    host_uuids: dict[str, str] = field(default_factory=dict)

    def used(self) -> dict[str, rs.Resources]:
        """What the servers use, host by host."""
        by_name = {f.name: f for f in FLAVORS}
        used: dict[str, rs.Resources] = {h: {} for h in self.hosts}
        for _server, host, flavor in self.servers:
            used[host] = rs.add(used[host], by_name[flavor].resources)
        return used

    def utilisation(self) -> float:
        total: rs.Resources = {}
        for usage in self.used().values():
            total = rs.add(total, usage)
        capacity = {rc: amount * len(self.hosts) for rc, amount in HOST.items()}
        return utilisation(total, capacity)


def pack(rng: random.Random, hosts: int, target: float, patience: int = 200) -> Layout:
    """Place servers of the mix on random hosts with room until ``target`` is reached.

    Each server's flavor is drawn by weight and put on a host drawn uniformly
    among those it fits, so hosts fill unevenly, as real ones do. Packing
    stops when the most used class reaches ``target`` of the cluster's
    capacity, or when ``patience`` draws in a row found no host.

    :param hosts: the number of hosts.
    :param target: the utilisation to reach, between 0 and 1.
    """
    layout = Layout(hosts=[f"sim{i:04d}" for i in range(hosts)])
    layout.host_uuids = {name: seeded_uuid(rng) for name in layout.hosts}
    used: dict[str, rs.Resources] = {h: {} for h in layout.hosts}
    total: rs.Resources = {}
    capacity = {rc: amount * hosts for rc, amount in HOST.items()}
    misses = 0
    while utilisation(total, capacity) < target and misses < patience:
        flavor = draw_flavor(rng)
        room = [h for h in layout.hosts if _fits(HOST, used[h], flavor.resources)]
        if not room:
            misses += 1
            continue
        misses = 0
        host = rng.choice(room)
        used[host] = rs.add(used[host], flavor.resources)
        total = rs.add(total, flavor.resources)
        layout.servers.append((seeded_uuid(rng), host, flavor.name))
    return layout


def _fits(capacity: Mapping[str, int], used: Mapping[str, int], wanted: Mapping[str, int]) -> bool:
    return all(used.get(rc, 0) + amount <= capacity.get(rc, 0) for rc, amount in wanted.items())


def build(layout: Layout, client: PlacementClient, db: Database, owner_trait: str) -> dict:
    """Register the hosts and place the servers of ``layout``; return the flavors.

    Hosts are registered one after another (Placement then orders its answers
    the same way every run).

    :param client: a Placement client (its requests are not the strategies').
    :param db: our database, schema synced.
    :param owner_trait: this deployment's owner trait.
    :returns: flavor name -> Flavor row.
    """
    flavors = {f.name: db.flavor_create(f.name, f.vcpus, f.memory_mb, f.root_gb) for f in FLAVORS}
    records = inventory_records()
    for name in layout.hosts:
        rp = layout.host_uuids[name]
        created = client.create_resource_provider(name, uuid=rp)
        generation = client.set_inventory(rp, records, generation=created["generation"])
        generation = client.put_traits(rp, [owner_trait], generation)
        db.compute_node_report(
            host=name, node=name, rp_uuid=rp, inventory=records, provider_generation=generation
        )
    by_name = {f.name: f for f in FLAVORS}
    for i in range(0, len(layout.servers), _BATCH):
        batch = layout.servers[i : i + _BATCH]
        client.post_allocations(
            {
                server: ConsumerWrite(
                    allocations={layout.host_uuids[host]: by_name[flavor].resources},
                    project_id=PROJECT,
                    user_id=USER,
                    generation=None,
                    consumer_type=INSTANCE,
                )
                for server, host, flavor in batch
            }
        )
    for n, (server, host, flavor) in enumerate(layout.servers):
        row = flavors[flavor]
        db.server_create(
            uuid=server,
            name=f"vm{n}",
            project_id=PROJECT,
            user_id=USER,
            flavor=row,
            status=states.STATUS_ACTIVE,
            vm_state=states.VM_ACTIVE,
            task_state=None,
            host=host,
            node=host,
            rp_uuid=layout.host_uuids[host],
        )
        # NOTE: a consumer's first write leaves it at generation 1, as a build does.
        db.server_update(server, placement_generation=1)
        request = rs.stored_request(row.to_snapshot())
        db.request_spec_create(
            server,
            resources=dict(request.resources),
            required_traits=sorted(request.required_traits),
        )
    return flavors
