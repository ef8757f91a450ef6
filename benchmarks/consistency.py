"""The end-of-run check: every host's usage in Placement against its servers' flavors.

:func:`check_consistency` reads what Placement holds per host and compares
it with the servers' flavors and the hosts' inventories;
:class:`CarriedOver` sets apart what an earlier run on the same cloud
already left wrong, so that each run is blamed for its own faults only.
"""

from __future__ import annotations

from figures import Consistency

from resize_sched import resources as rs
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient

#: Up to this many hosts the consistency check reads every host.
CHECK_ALL_HOSTS_UP_TO = 200


def check_consistency(
    db: Database, client: PlacementClient, hosts: dict[str, str], only: set[str] | None = None
) -> Consistency:
    """Compare hosts' usage in Placement with their servers' flavors and capacity.

    Meaningful when nothing is in flight: then each server holds exactly its
    flavor on its host and nothing else holds anything. Whatever the servers
    hold, no host may hold more than its inventory allows.

    :param hosts: host name -> provider uuid.
    :param only: provider uuids to read (None: every host).
    """
    checked = {n: rp for n, rp in hosts.items() if only is None or rp in only}
    result = Consistency(hosts_checked=len(checked))
    servers = db.server_list()
    expected: dict[str, rs.Resources] = {}
    for server in servers:
        if server.status != "ACTIVE" or server.task_state is not None:
            result.not_active.append(f"{server.name} {server.status}/{server.task_state}")
        if server.needs_heal:
            result.needs_heal.append(server.name)
        if server.rp_uuid:
            wanted = rs.flavor_request(server.flavor).resources
            expected[server.rp_uuid] = rs.add(expected.get(server.rp_uuid, {}), wanted)
    result.in_flight = [f"{m.uuid} {m.status}" for m in db.migration_list_in_flight()]
    names = {server.uuid: server.name for server in servers}
    for name, rp in checked.items():
        usage = client.get_usages(rp)
        inventories, _generation = client.get_inventories(rp)
        for rc, used in usage.items():
            capacity = rs.capacity(inventories.get(rc, {}))
            if used > capacity:
                result.over_capacity.setdefault(name, {})[rc] = (used, capacity)
        if usage != expected.get(rp, {}):
            result.differ[name] = (expected.get(rp, {}), usage)
            result.holders[name] = {
                names.get(consumer, f"consumer {consumer}"): held
                for consumer, held in client.get_provider_allocations(rp).items()
            }
    return result


class CarriedOver:
    """What earlier runs on one cloud left wrong, left out of the next runs' checks.

    A run that leaves a server flagged for healing (drop_and_reclaim's
    restore refused under concurrency) would otherwise be blamed on every
    later run; what is left out is counted apart (``carried_over``).
    """

    #: the list fields of a Consistency whose items are faults of their own
    LISTS = ("not_active", "needs_heal", "in_flight")

    def __init__(self) -> None:
        self.known: set[tuple[str, str]] = set()

    def fresh(self, found: Consistency) -> Consistency:
        """``found`` without what an earlier run already left wrong (counted apart)."""
        known = self.known
        fresh = Consistency(hosts_checked=found.hosts_checked)
        for host, pair in found.differ.items():
            if ("differ", host) in known:
                fresh.carried_over += 1
            else:
                fresh.differ[host] = pair
                fresh.holders[host] = found.holders.get(host, {})
        for host, classes in found.over_capacity.items():
            if ("over", host) in known:
                fresh.carried_over += 1
            else:
                fresh.over_capacity[host] = classes
        for kind in self.LISTS:
            for item in getattr(found, kind):
                if (kind, item) in known:
                    fresh.carried_over += 1
                else:
                    getattr(fresh, kind).append(item)
        known.update(("differ", host) for host in found.differ)
        known.update(("over", host) for host in found.over_capacity)
        for kind in self.LISTS:
            known.update((kind, item) for item in getattr(found, kind))
        return fresh
