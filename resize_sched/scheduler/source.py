"""Judging a resize's source, which may be asked for less than the new flavor.

A claim strategy may ask the source of a resize for something else than
every other host (``ClaimStrategy.source_request``: the increase alone under
``max_flavor``), so the :class:`~resize_sched.scheduler.manager.Scheduler`
judges the source apart from the query over every host, by the cheapest
question that answers it:

* a source that needs nothing more: one provider listing checks that it is
  still ours, enabled, with the traits and aggregates asked for;
* a source whose compute service reports it, whose root has every class
  asked for: from its reported inventory and its usage (one light request).
  Beside the other hosts' candidates (:meth:`SourceMixin._judge_beside`),
  the usage is read on the scheduler's pool while the query over every host
  runs, so the resize waits for one round trip; a source the query returned
  anyway is judged from its summary in that answer;
* an amount pinned to providers of its tree (a vGPU's child, a disk's pool:
  ``source_placement``): each provider's inventory and usage
  (:meth:`SourceMixin._judge_tree`);
* new numbered groups (``source_groups``): a candidates query in its tree,
  passing over a candidate that breaks ``isolate`` against what the server
  holds (:meth:`SourceMixin._judge_groups`);
* a class its root lacks that a sharing provider of its aggregates has:
  :mod:`resize_sched.scheduler.pools`;
* anything else: a candidates query with ``in_tree=<source>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import host_api
from resize_sched.placement.client import Candidates
from resize_sched.resources import Resources, group_map
from resize_sched.scheduler import hosts
from resize_sched.scheduler.host_state import free_in
from resize_sched.scheduler.pools import SharedSourceMixin, lacks_a_class
from resize_sched.scheduler.request import Destination, SchedulingRequest
from resize_sched.scheduler.verdict import _asks_placement_only, _fits

if TYPE_CHECKING:
    from collections.abc import Callable

LOG = logging.getLogger(__name__)

#: The weight of a source that needs nothing more (a shrink under max_flavor):
#: staying put costs nothing and moves no disk, so it always comes first.
_FREE_SOURCE_WEIGHT = math.inf


def _free(inventory: dict[str, Any], used: dict[str, Any]) -> dict[str, float]:
    """What a provider has free, class by class, from its inventory and usage."""
    return {rc: rs.capacity(record) - used.get(rc, 0) for rc, record in inventory.items()}


@dataclass(frozen=True)
class _SourceAnswer:
    """What the pool learned about a resize's source while every other host
    was asked: its compute node as its service reported it, enabled, with
    its usage when it was read too (judged next, beside the other hosts'
    candidates), or else the answer already known (``judged``: Placement's,
    or None for a disabled or vanished source)."""

    node: host_api.ReportedNode | None = None
    judged: tuple[float, Destination] | None = None
    #: the source's usage, read beside the query over every host
    used: dict[str, Any] | None = None


class SourceMixin(SharedSourceMixin):
    """The source judgement of the :class:`~resize_sched.scheduler.manager.Scheduler`
    it is mixed into; uses its client, database, configuration, host names,
    ``_query``, ``_score``, ``_filter``, ``_root_of`` and ``_host_name``."""

    conf: Any
    owner_trait: str
    _usable: tuple[str, ...]
    _enabled: tuple[str, ...]
    _query: Callable[..., Candidates]
    _score: Callable[..., list[tuple[float, Destination]]]
    _filter: Callable[..., list[tuple[float, Destination]]]
    _host_name: Callable[[str], str]

    def _ask_source(
        self, request: SchedulingRequest, *, seen: bool = False
    ) -> tuple[float, Destination] | None:
        """Ask about the source alone; ``None`` when it cannot take the resize.

        :param seen: the source is among the candidates of the query over
            every host, so it is owned, enabled and has the required traits.
        """
        source = request.source
        assert source is not None
        amounts = rs.normalize(request.source_request)
        if not amounts:
            # NOTE: nothing more is needed, but the source must still be a
            # host of ours that takes new work, with any new required trait
            # and in the aggregates asked for: one cheap provider query checks
            # it, and names the host on the way.
            if not seen and not self._source_usable(request):
                return None
            dest = Destination(source, self._host_name(source), {}, same_host=True)
            return (_FREE_SOURCE_WEIGHT, dest)
        answer = self._about_source(request, amounts)
        if answer.node is None:
            return answer.judged
        return self._judge_from_usage(request, amounts, answer.node)

    def _about_source(
        self, request: SchedulingRequest, amounts: Resources, *, beside: bool = False
    ) -> _SourceAnswer:
        """The source's compute node when it can be judged from it, else
        Placement's answer for the source alone (``in_tree``).

        :param beside: the source is judged beside the other hosts, whose
            query runs meanwhile: read its usage too, now.
        """
        if request.source_groups:
            return _SourceAnswer(judged=self._judge_groups(request, amounts))
        if set(request.source_placement) - {request.source}:
            return _SourceAnswer(judged=self._judge_tree(request))
        node = self._reported_source(request)
        if node is not None and node.disabled and not lacks_a_class(node, amounts):
            LOG.debug("Source %s is disabled", node.host)
            return _SourceAnswer()  # judged: it takes no new work
        if node is not None and not lacks_a_class(node, amounts):
            if not beside:
                return _SourceAnswer(node=node)
            try:
                return _SourceAnswer(node=node, used=self.client.get_usages(node.uuid))
            except exception.PlacementNotFound:
                return _SourceAnswer()  # gone: a claim there would be refused
        # NOTE: a class the source's root lacks may be on a sharing provider
        # (its disk pool), which in_tree=<source> never sees: see
        # resize_sched.scheduler.pools. A flat host never gets here.
        pooled = self._source_on_pools(request, amounts, node)
        if pooled is not None:
            judged = None
            if pooled.placement is not None:
                weight = self.conf.filter_scheduler.ram_weight_multiplier * pooled.free_ram
                host = self._host_name(pooled.source)
                dest = Destination(
                    pooled.source,
                    host,
                    pooled.placement,
                    same_host=True,
                    free={rs.MEMORY_MB: pooled.free_ram},
                )
                judged = (weight, dest)
            return _SourceAnswer(judged=judged)
        candidates = self._query(amounts, request, in_tree=request.source)
        scored = self._score(candidates, request, keep_source=True)
        return _SourceAnswer(judged=scored[0] if scored else None)

    def _judge_groups(
        self, request: SchedulingRequest, amounts: Resources
    ) -> tuple[float, Destination] | None:
        """The source asked for new numbered groups and the rest of
        ``amounts``, in its tree (``in_tree``); under ``isolate`` a candidate
        whose ``mappings`` put a new group on a provider the server's groups
        already hold is passed over (Placement isolates the groups of one
        query, not a group from what is held)."""
        source = request.source
        assert source is not None
        groups = request.source_groups
        grouped = rs.total(rs.add_allocations(*({g.suffix: g.resources} for g in groups)))
        # NOTE: what the held groups grow by stays on their own providers
        # (source_placement): judged from the summaries beside each
        # candidate, never asked unnumbered (Placement would put it anywhere).
        placed = rs.normalize_allocations(request.source_placement)
        grouped = rs.add(grouped, rs.total(placed))
        rest = rs.normalize({rc: max(n - grouped.get(rc, 0), 0) for rc, n in amounts.items()})
        candidates = self._query(rest, request, in_tree=source, groups=groups)
        suffixes = {g.suffix for g in groups}
        for index, allocation_request in enumerate(candidates.allocation_requests):
            mapping = candidates.mappings[index] if index < len(candidates.mappings) else {}
            used = {rp for suffix in suffixes for rp in mapping.get(suffix, ())}
            if used & request.source_avoid:
                continue
            summaries = candidates.provider_summaries
            if not group_map.fits_beside(summaries, placed, allocation_request):
                continue
            kept = Candidates([allocation_request], summaries, [mapping])
            scored = self._score(kept, request, keep_source=True)
            if scored:
                weight, dest = scored[0]
                claim = rs.add_allocations(dest.allocation_request, placed)
                return weight, replace(dest, allocation_request=claim)
        LOG.debug("Source %s has no room for new groups %s", source, sorted(suffixes))
        return None

    def _judge_tree(self, request: SchedulingRequest) -> tuple[float, Destination] | None:
        """Whether the source has ``source_placement`` free, provider by provider.

        A candidates query cannot pin an amount to one provider of a tree, and
        ``in_tree=<source>`` leaves a sharing provider out altogether, so each
        provider named is judged from its own inventory (the root's as its
        service reported it, when it did) and usage: two light requests per
        provider. The claim that follows is judged by Placement all the same.
        """
        source = request.source
        assert source is not None
        node = None
        if self.db is not None:
            node = host_api.compute_node_for_source(self.db, source)
            if node is not None and node.disabled:
                LOG.debug("Source %s is disabled", node.host)
                return None
        if (node is None or _asks_placement_only(request)) and not self._source_usable(request):
            return None
        wanted = dict(request.source_placement)
        if source not in wanted:
            wanted[source] = {}  # read for its free RAM, which weighs it
        free: dict[str, float] = {}
        for provider, amounts in wanted.items():
            try:
                if node is not None and provider == source:
                    inventory = node.inventory
                else:
                    inventory = self.client.get_inventories(provider)[0]
                used = self.client.get_usages(provider)
            except exception.PlacementNotFound:
                return None  # gone: a claim there would be refused
            if not _fits(inventory, amounts, used):
                LOG.debug(
                    "Source %s: provider %s lacks %s",
                    source,
                    provider,
                    rs.format_resources(amounts),
                )
                return None
            if provider == source:
                free = _free(inventory, used)
        host = node.host if node is not None else self._host_name(source)
        weight = self.conf.filter_scheduler.ram_weight_multiplier * free.get(rs.MEMORY_MB, 0)
        placement = rs.normalize_allocations(request.source_placement)
        return (weight, Destination(source, host, placement, same_host=True, free=free))

    def _reported_source(self, request: SchedulingRequest) -> host_api.ReportedNode | None:
        """The source's compute node, when the source can be judged from it
        (if its root has every class asked for: see
        :func:`~resize_sched.scheduler.pools.lacks_a_class`).

        A candidates query limited to the source costs Placement as much as
        one over the whole cloud. When the source is a host whose compute
        service reports it (its inventory and whether it is disabled are in
        ``compute_nodes`` and ``services``), its usage is all that is left to
        know (see :meth:`_judge_beside`).

        :returns: None when it must be asked the usual way: no database, no
            report, traits or aggregates asked for (they live in Placement).
        """
        source = request.source
        assert source is not None
        if self.db is None or _asks_placement_only(request):
            return None
        node = host_api.compute_node_for_source(self.db, source)
        if node is None:
            return None
        self._names[source] = node.host
        return node

    def _judge_beside(
        self,
        request: SchedulingRequest,
        amounts: Resources,
        answer: _SourceAnswer,
        candidates: Candidates,
    ) -> tuple[float, Destination] | None:
        """Judge the reported source beside every other host's candidates.

        A source among the candidates has room for the whole request, so for
        ``amounts`` too: its summary in that answer weighs it. Any other is
        judged from the usage read beside the query
        (:attr:`_SourceAnswer.used`).
        """
        node = answer.node
        assert node is not None and answer.used is not None
        summary = candidates.provider_summaries.get(node.uuid)
        if summary is not None and any(
            self._root_of(ar, candidates) == node.uuid for ar in candidates.allocation_requests
        ):
            return self._source_destination(node, amounts, free_in(summary))
        return self._judge_used(node, amounts, answer.used)

    def _judge_from_usage(
        self, request: SchedulingRequest, amounts: Resources, node: host_api.ReportedNode
    ) -> tuple[float, Destination] | None:
        """Whether the reported source has ``amounts`` free, from its usage
        (``GET /resource_providers/{uuid}/usages``, a fraction of a candidates
        query's cost). The claim that follows is judged by Placement all the
        same: a usage that changed meanwhile only means a refused claim, and
        the next alternate."""
        try:
            used = self.client.get_usages(node.uuid)
        except exception.PlacementNotFound:
            return None  # gone: a claim there would be refused
        return self._judge_used(node, amounts, used)

    def _judge_used(
        self, node: host_api.ReportedNode, amounts: Resources, used: dict[str, Any]
    ) -> tuple[float, Destination] | None:
        """Whether the reported source has ``amounts`` free beside ``used``."""
        if not _fits(node.inventory, amounts, used):
            LOG.debug("Source %s lacks %s", node.host, rs.format_resources(amounts))
            return None
        return self._source_destination(node, amounts, _free(node.inventory, used))

    def _source_destination(
        self, node: host_api.ReportedNode, amounts: Resources, free: dict[str, float]
    ) -> tuple[float, Destination]:
        source = node.uuid
        weight = self.conf.filter_scheduler.ram_weight_multiplier * free.get(rs.MEMORY_MB, 0)
        dest = Destination(
            source,
            node.host,
            rs.on(source, amounts),
            same_host=True,
            free=free,
            # NOTE: the node as read to judge it: its host state reads nothing.
            node=node.state,
        )
        return (weight, dest)

    def _source_usable(self, request: SchedulingRequest) -> bool:
        found = hosts.list_owned(
            self.client,
            self.owner_trait,
            in_tree=request.source,
            required=[*self._enabled, *sorted(request.required_traits)],
            member_of=request.member_of,
        )
        for rp in found:
            if rp["uuid"] == request.source:
                self._names[rp["uuid"]] = rp["name"]
                return True
        return False
