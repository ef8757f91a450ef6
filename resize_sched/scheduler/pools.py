"""A resize's source whose provider for a class is a sharing provider.

A host may take a class from a provider it shares through an aggregate
(``MISC_SHARES_VIA_AGGREGATE``: a disk pool, the host itself having no
``DISK_GB``). When a resize asks the source for a class the server never
held there (a boot-from-volume flavor, disk 0, resized to one with a disk),
neither the strategy nor the server's holdings say which provider has it,
and the usual question, a candidates query with ``in_tree=<source>``, never
looks beyond the source's own tree: Placement leaves sharing providers out of
a group limited to a tree (``in_tree``, and ``in_treeN=<root>`` alike), so
the pool is never seen and the same-host resize is refused even when the
pool has room.

:class:`SharedSourceMixin` asks instead, for the source only and only when
its compute node as reported lacks a class asked for:

#. the source root's aggregates (``GET /resource_providers/{uuid}/aggregates``);
#. the sharing providers in any of them that have every such class free now
   (one listing: ``member_of=in:...``, ``required=MISC_SHARES_VIA_AGGREGATE``,
   ``resources=...``), which is what Placement itself would combine with the
   source in a query over every host;
#. the source's usage, for the classes its root has and its weight.

The answer names the source's root and one of those pools and nothing else,
so what is claimed can only land on the source's tree and its sharing
providers. With no pool found (no aggregate, no sharing provider, or none
with room) the source is asked the usual way, which finds a class on a child
and fails as before otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import host_api
from resize_sched.placement.client import SHARING_TRAIT
from resize_sched.resources import Allocations, Resources
from resize_sched.scheduler.verdict import _asks_placement_only, _fits

if TYPE_CHECKING:
    from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PooledSource:
    """The source judged together with its sharing providers.

    :ivar source: the source's root provider.
    :ivar placement: what to claim there, provider by provider (the root's
        classes on the root, the others on one pool); None: the source
        cannot take the request (disabled, gone, no room on its root).
    :ivar free_ram: the root's free ``MEMORY_MB``, which weighs it.
    """

    source: str
    placement: Allocations | None
    free_ram: float = 0.0


def lacks_a_class(node: host_api.ReportedNode, amounts: Resources) -> bool:
    """Whether the source's root, as reported, lacks a class of ``amounts``
    (on a child or a sharing provider): it cannot be judged from its report
    alone. Never true of a flat host."""
    return any(rc not in node.inventory for rc in amounts)


def sharing_pools(client: Any, root: str, amounts: Resources) -> list[str]:
    """The sharing providers of ``root``'s aggregates with ``amounts`` free now.

    Two requests: the root's aggregates, then the listing (none when the root
    is in no aggregate).

    :raises PlacementNotFound: ``root`` is gone.
    """
    aggregates, _ = client.get_aggregates(root)
    if not aggregates:
        return []
    found = client.list_resource_providers(
        member_of=["in:" + ",".join(sorted(aggregates))],
        required=[SHARING_TRAIT],
        resources=amounts,
    )
    # NOTE: a sharing provider is its own root; the source itself, were it
    # marked as sharing, is no pool of its own.
    return [rp["uuid"] for rp in found if rp["uuid"] != root]


class SharedSourceMixin:
    """The source-with-pools judgement of the :class:`Scheduler` it is mixed
    into. Uses the scheduler's ``client``, ``db``, ``_names`` and
    ``_source_usable``."""

    client: Any
    db: Any
    _names: dict[str, str]
    _source_usable: Callable[[SchedulingRequest], bool]

    def _source_on_pools(
        self,
        request: SchedulingRequest,
        amounts: Resources,
        node: host_api.ReportedNode | None,
    ) -> PooledSource | None:
        """Judge the source with the sharing providers of its aggregates, when
        its root lacks a class of ``amounts``.

        :param node: the source's compute node, when already read; read here
            otherwise (traits or aggregates asked: the caller did not).
        :returns: None when this does not apply (no report of the source,
            every class on its root, or no pool with room for the classes its
            root lacks): the source is then asked the usual way.
        """
        source = request.source
        assert source is not None
        if node is None and self.db is not None:
            node = host_api.compute_node_for_source(self.db, source)
        if node is None:
            return None
        shared = {rc: n for rc, n in amounts.items() if rc not in node.inventory}
        if not shared:
            return None
        if node.disabled:
            LOG.debug("Source %s is disabled", node.host)
            return PooledSource(source, None)
        self._names[source] = node.host
        try:
            pools = sharing_pools(self.client, source, shared)
        except exception.PlacementNotFound:
            return PooledSource(source, None)  # gone: a claim there would be refused
        if not pools:
            LOG.debug(
                "Source %s: no sharing provider of its aggregates has %s free",
                node.host,
                rs.format_resources(shared),
            )
            return None
        if _asks_placement_only(request) and not self._source_usable(request):
            return PooledSource(source, None)
        on_root = {rc: n for rc, n in amounts.items() if rc not in shared}
        try:
            used = self.client.get_usages(source)
        except exception.PlacementNotFound:
            return PooledSource(source, None)
        if not _fits(node.inventory, on_root, used):
            LOG.debug("Source %s lacks %s", node.host, rs.format_resources(on_root))
            return PooledSource(source, None)
        memory = node.inventory.get(rs.MEMORY_MB)
        free_ram = rs.capacity(memory) - used.get(rs.MEMORY_MB, 0) if memory else 0.0
        # NOTE: the first pool as Placement lists it; with several, the claim
        # that follows is judged by Placement all the same.
        placement = rs.add_allocations(rs.on(source, on_root), rs.on(pools[0], shared))
        LOG.debug("Source %s takes %s from sharing provider %s", node.host, shared, pools[0])
        return PooledSource(source, placement, free_ram)
