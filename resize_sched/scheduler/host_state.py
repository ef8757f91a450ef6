"""What the filters and weighers know of one candidate host.

A :class:`HostState` is built in memory for every candidate of a scheduling
request (:func:`build_host_states`): its free amounts from Placement's
provider summaries (or, for a resize's source judged on its own, from what
that judgement read), and the rest from the database in a fixed number of
queries for all candidates together (see
:mod:`resize_sched.db.host_state_api`): the compute node and its service
always (each row kept by the scheduler for ``[scheduler]
compute_node_cache_seconds``: :mod:`resize_sched.scheduler.node_cache`), the
hosts' aggregates with their metadata and the servers on them
only when an enabled filter or weigher declares it needs them
(:attr:`~resize_sched.scheduler.filters.BaseHostFilter.needs`). No Placement
request is made here.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from resize_sched import resources as rs
from resize_sched.db.host_state_api import AggregateRow, NodeRow
from resize_sched.scheduler.node_cache import NodeCache
from resize_sched.scheduler.request import Destination

#: What a filter or weigher may ask to be read for every candidate.
AGGREGATES = "aggregates"
SERVERS = "servers"

#: The architecture and virtual machine mode every node of the fake
#: hypervisor supports (Nova's fake driver reports the same).
FAKE_ARCHITECTURE = "x86_64"
FAKE_VM_MODE = "hvm"


class HostState:
    """One candidate host, as the filters and weighers see it.

    :ivar uuid: the root provider of the host.
    :ivar host: the host's name (its compute service's ``[DEFAULT] host``).
    :ivar free: resource class -> what Placement can still give out on the
        root (capacity with the allocation ratio, less usage); empty when
        unknown.
    :ivar total: resource class -> capacity (allocation ratio applied).
    :ivar service_known: a compute service reported this host (its row is
        read); False without a database or before its first report.
    :ivar disabled: the service row's flag; ``forced_down`` likewise.
    :ivar last_seen_up: the service's last heartbeat (None: never).
    :ivar hypervisor_type: the node's (``fake`` for our fake hypervisor).
    :ivar hypervisor_hostname: the node's name.
    :ivar failed_builds: builds that failed here in a row.
    :ivar aggregates: the aggregates the host is in (read only when needed).
    :ivar servers: uuids of the servers on the host (read only when needed).
    :ivar same_host: the host is the source of the resize being scheduled.
    """

    __slots__ = (
        "uuid",
        "host",
        "free",
        "total",
        "service_known",
        "disabled",
        "forced_down",
        "last_seen_up",
        "hypervisor_type",
        "hypervisor_hostname",
        "failed_builds",
        "aggregates",
        "servers",
        "same_host",
        "_metadata",
    )

    def __init__(
        self,
        uuid: str,
        host: str,
        *,
        free: Mapping[str, float] | None = None,
        total: Mapping[str, float] | None = None,
        service_known: bool = False,
        disabled: bool = False,
        forced_down: bool = False,
        last_seen_up: datetime.datetime | None = None,
        hypervisor_type: str = "fake",
        hypervisor_hostname: str | None = None,
        failed_builds: int = 0,
        aggregates: Iterable[AggregateRow] = (),
        servers: Iterable[str] = (),
        same_host: bool = False,
    ) -> None:
        self.uuid = uuid
        self.host = host
        self.free: dict[str, float] = dict(free or {})
        self.total: dict[str, float] = dict(total or {})
        self.service_known = service_known
        self.disabled = disabled
        self.forced_down = forced_down
        self.last_seen_up = last_seen_up
        self.hypervisor_type = hypervisor_type
        self.hypervisor_hostname = hypervisor_hostname or host
        self.failed_builds = failed_builds
        self.aggregates: list[AggregateRow] = list(aggregates)
        self.servers: frozenset[str] = frozenset(servers)
        self.same_host = same_host
        self._metadata: dict[str, set[str]] | None = None

    def __repr__(self) -> str:
        return f"<HostState {self.host} {self.uuid}>"

    # -- what Nova's HostState calls them ---------------------------------------------

    @property
    def free_ram_mb(self) -> float:
        return self.free.get(rs.MEMORY_MB, 0)

    @property
    def total_usable_ram_mb(self) -> float:
        return self.total.get(rs.MEMORY_MB, 0)

    @property
    def free_disk_mb(self) -> float:
        return self.free.get(rs.DISK_GB, 0) * 1024

    @property
    def free_vcpus(self) -> float:
        """Free vCPUs, the allocation ratio applied."""
        return self.free.get(rs.VCPU, 0)

    @property
    def vcpus_total(self) -> float:
        return self.total.get(rs.VCPU, 0)

    @property
    def memory_mb(self) -> float:
        return self.total_usable_ram_mb

    @property
    def supported_instances(self) -> list[tuple[str, str, str]]:
        """(architecture, hypervisor type, vm mode) the node can run."""
        return [(FAKE_ARCHITECTURE, self.hypervisor_type, FAKE_VM_MODE)]

    def aggregate_metadata(self) -> dict[str, set[str]]:
        """Every metadata key of the host's aggregates -> the set of its
        values, each value split on commas (as Nova's
        ``aggregate_metadata_get_by_host``)."""
        if self._metadata is None:
            merged: dict[str, set[str]] = {}
            for aggregate in self.aggregates:
                for key, value in aggregate.metadata.items():
                    merged.setdefault(key, set()).update(v.strip() for v in value.split(","))
            self._metadata = merged
        return self._metadata

    def is_up(self, down_time: float, now: datetime.datetime | None = None) -> bool:
        """The service reported within ``down_time`` seconds and is not forced down."""
        if self.forced_down or self.last_seen_up is None:
            return False
        now = now or datetime.datetime.now(datetime.UTC)
        seen = self.last_seen_up
        if seen.tzinfo is None:
            seen = seen.replace(tzinfo=datetime.UTC)
        return (now - seen).total_seconds() <= down_time


def free_in(summary: Mapping[str, Any] | None) -> dict[str, float]:
    """What a provider summary says is free, class by class."""
    return {
        rc: record.get("capacity", 0) - record.get("used", 0)
        for rc, record in ((summary or {}).get("resources") or {}).items()
    }


def capacity_in(summary: Mapping[str, Any] | None) -> dict[str, float]:
    """What a provider summary says the provider can hold in all, class by
    class (its capacity: ``(total - reserved) * allocation_ratio``)."""
    return {
        rc: record.get("capacity", 0)
        for rc, record in ((summary or {}).get("resources") or {}).items()
    }


def free_and_capacity(
    summary: Mapping[str, Any] | None,
) -> tuple[dict[str, float], dict[str, float]]:
    """:func:`free_in` and :func:`capacity_in` of one summary, in one pass
    (the scheduler wants both for every candidate)."""
    free: dict[str, float] = {}
    capacity: dict[str, float] = {}
    resources = summary.get("resources") if summary else None
    if resources:
        for rc, record in resources.items():
            cap = record.get("capacity", 0)
            free[rc] = cap - record.get("used", 0)
            capacity[rc] = cap
    return free, capacity


def build_host_states(
    db: Any,
    destinations: Iterable[Destination],
    needs: frozenset[str] = frozenset(),
    nodes: NodeCache | None = None,
) -> list[HostState]:
    """One host state per destination, in the same order.

    :param db: the database (None: only what the summaries say is known).
    Each host's free amounts are its :attr:`Destination.free` (from
    Placement's provider summaries, or what judging a resize's source read),
    and its capacities its :attr:`Destination.total` when known (from the
    summaries), else its compute node's inventory's. A destination that
    carries its node (:attr:`Destination.node`) is not read again.

    :param needs: the extra facts to read (:data:`AGGREGATES`, :data:`SERVERS`).
    :param nodes: where the compute node rows come from (a scheduler's
        :class:`~resize_sched.scheduler.node_cache.NodeCache`); None: read
        from ``db``.
    """
    dests = list(destinations)
    rows: dict[str, NodeRow] = {d.provider: d.node for d in dests if d.node is not None}
    unread = [d for d in dests if d.node is None]
    if db is not None and unread:
        # NOTE: the inventories (a JSON document a host, most of the read)
        # only when some host's capacity is not known from Placement.
        read = nodes.nodes if nodes is not None else db.host_state_nodes
        rows.update(
            read((d.provider for d in unread), inventory=any(d.total is None for d in unread))
        )
    names = {d.host for d in dests}
    aggregates: dict[str, list[AggregateRow]] = {}
    servers: dict[str, set[str]] = {}
    if db is not None and names:
        if AGGREGATES in needs:
            aggregates = db.host_aggregates(names)
        if SERVERS in needs:
            servers = db.servers_on_hosts(names)
    # NOTE: one host state per candidate, a thousand per request at most:
    # set through __new__ rather than the keyword arguments of __init__,
    # which cost as much again (the same values, the same copies).
    new = HostState.__new__
    empty: frozenset[str] = frozenset()
    states = []
    for dest in dests:
        node = rows.get(dest.provider)
        host = dest.host
        state = new(HostState)
        state.uuid = dest.provider
        state.host = host
        state.free = dict(dest.free) if dest.free else {}
        if dest.total is not None:
            state.total = dict(dest.total)
        elif node is not None:
            state.total = {rc: rs.capacity(r) for rc, r in node.inventory.items()}
        else:
            state.total = {}
        if node is not None:
            state.service_known = node.disabled is not None
            state.disabled = bool(node.disabled)
            state.forced_down = bool(node.forced_down)
            state.last_seen_up = node.last_seen_up
            state.hypervisor_type = node.hypervisor_type
            state.hypervisor_hostname = node.hypervisor_hostname or host
            state.failed_builds = node.failed_builds
        else:
            state.service_known = False
            state.disabled = False
            state.forced_down = False
            state.last_seen_up = None
            state.hypervisor_type = "fake"
            state.hypervisor_hostname = host
            state.failed_builds = 0
        found = aggregates.get(host)
        state.aggregates = list(found) if found else []
        servers_on = servers.get(host)
        state.servers = frozenset(servers_on) if servers_on else empty
        state.same_host = dest.same_host
        state._metadata = None
        states.append(state)
    return states


__all__ = ["AGGREGATES", "SERVERS", "HostState", "build_host_states"]
