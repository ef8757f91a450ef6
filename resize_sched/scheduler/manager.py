"""Choose destinations from Placement's allocation candidates.

One call, :meth:`Scheduler.select_destinations`, runs the queries a request
needs, filters and weighs the candidates, and returns the chosen host first
and up to ``[scheduler] max_attempts - 1`` alternates, each with the
allocation request to claim it with. Nothing is claimed here: the conductor
claims through the transition executor, so that the claim and the strategy's
other holdings change in one write.

The source host of a resize is looked at separately from the others, because
a claim strategy may ask it for something else than the new flavor (see
:meth:`resize_sched.strategies.ClaimStrategy.source_request`):

* when the source may not be chosen, or when it is asked the same as every
  other host, one query over every host answers;
* otherwise every other host is asked for the new flavor and the source alone
  for what the strategy says. A source whose compute service reports it is
  judged against the inventory and disabled flag that service reported: from
  its summary when the query over every host returned it anyway (it has room
  for the whole new flavor), not at all when even holding nothing but this
  resize it would weigh too little to be chosen or stand as an alternate, and
  otherwise from its usage (one cheap request). For any other, or when
  traits or aggregates are asked for, it is a candidates query with
  ``in_tree=<source>`` (one limited to one tree costs Placement as much as
  one over the whole cloud);
* with ``[resize] prefer_same_host`` the source is asked first and, when it
  fits, is returned alone (``Selection.complete`` is false) without asking
  about any other host.

In the second case the source's compute node is read (or its ``in_tree``
query asked) on a small thread pool of the scheduler while the calling thread
asks about every other host, so a resize waits for one round trip, two only
when the source's usage must be read.

Only hosts of this deployment that take new work are ever candidates, and
Placement itself leaves the others out: every query asks for roots with the
deployment's owner trait and without ``COMPUTE_STATUS_DISABLED``
(``root_required``), so a host registered by another service, or by another
deployment sharing the Placement, costs nothing and is never seen (see
:mod:`resize_sched.scheduler.hosts` for disabling a host).

What the scheduler knows of its hosts without asking Placement comes from the
``compute_nodes`` and ``services`` tables, which the compute services'
reports keep current: the host name of each provider, its inventory, and
whether its service is disabled. A candidate the table does not name costs
one request for its name. The verdict of a failure (could the request ever
fit some allowed host, empty?) is judged, as Nova's host manager does, on
the reported hosts alone, so it costs no Placement request: a provider whose
service has not reported yet is no host there, which can only turn a
``deferred`` into an ``infeasible`` for that short while, never make a
resize succeed or fail. Placement is listed for the verdict only when the
request asks for traits or aggregates, or when no compute node was ever
reported.

Among hosts of equal standing, racing conductors would all pick the same
first one; ``[scheduler] host_subset_size`` makes each pick at random among
the best N instead (N = 1 by default: always the best).
"""

import math
import random
import threading
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception, group_map
from resize_sched import resources as rs
from resize_sched.db import host_api
from resize_sched.placement.client import (
    DISABLED_TRAIT,
    SHARING_TRAIT,
    Candidates,
    PlacementClient,
    owner_trait,
)
from resize_sched.resources import Allocations, Resources
from resize_sched.scheduler import hosts
from resize_sched.scheduler.source import SharedSourceMixin, lacks_a_class
from resize_sched.scheduler.verdict import (
    VerdictMixin,
    _asks_placement_only,
    _fits,
)

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: Threads of a scheduler's pool: each resize with a separate source query
#: uses one for as long as that query takes.
_POOL_SIZE = 4

#: The weight of a source that needs nothing more (a shrink under max_flavor):
#: staying put costs nothing and moves no disk, so it always comes first.
_FREE_SOURCE_WEIGHT = math.inf


@dataclass(frozen=True)
class Destination:
    """A host that can take the request, with what to claim on it, and the
    candidate's ``mappings`` (group suffix -> providers) when the request has
    numbered groups (None: a flat request, or no candidate to map)."""

    provider: str
    host: str
    allocation_request: Allocations
    same_host: bool = False
    mappings: dict[str, list[str]] | None = None


@dataclass(frozen=True)
class Selection:
    """The chosen host first, then the alternates in order of preference.

    ``complete`` is false when only the source was asked (prefer_same_host);
    the caller asks again, without the source, if it cannot use it.
    """

    destinations: list[Destination]
    complete: bool = True


@dataclass(frozen=True)
class SchedulingRequest:
    """What a build or resize asks of the scheduler.

    :ivar destination_request: amounts every host but the source must have free
        (in all: the numbered ``groups`` are part of them).
    :ivar groups: numbered request groups (a vGPU from one child), asked as
        Placement's ``resourcesN``/``requiredN``/``member_ofN``; the rest of
        ``destination_request`` is the unnumbered group.
    :ivar source: the source provider of a resize (``None`` for a build).
    :ivar source_request: what the source must have free (empty: it fits
        without asking); ignored without ``source``.
    :ivar ignore_hosts: host names never to choose.
    :ivar force_hosts: when given, only these host names may be chosen.
    :ivar ignore_providers: provider uuids never to choose (hosts already tried).
    :ivar source_placement: ``source_request`` provider by provider, when it
        must be free beside what the server holds there (a child's vGPU, a
        sharing provider's disk); empty: anywhere in the source's tree.
    :ivar source_groups: numbered groups the source must satisfy as groups,
        part of ``source_request`` (a second vGPU); Placement is asked, in
        the source's tree.
    :ivar source_avoid: providers none of ``source_groups`` may use (the
        devices the server's groups hold, under ``group_policy=isolate``).
    :ivar source_holds: what the resize already holds on the source (both
        consumers; empty when unknown): the source's usage is at least that,
        which bounds how well it can weigh without asking Placement.
    """

    destination_request: Resources
    required_traits: frozenset[str] = frozenset()
    member_of: tuple[str, ...] = ()
    forbidden_traits: frozenset[str] = frozenset()
    groups: tuple[rs.RequestGroup, ...] = ()
    group_policy: str | None = None
    source: str | None = None
    source_request: Resources = field(default_factory=dict)
    allow_same_host: bool = False
    prefer_same_host: bool = False
    ignore_hosts: frozenset[str] = frozenset()
    force_hosts: frozenset[str] = frozenset()
    ignore_providers: frozenset[str] = frozenset()
    source_holds: Resources = field(default_factory=dict)
    source_placement: Allocations = field(default_factory=dict)
    source_groups: tuple[rs.RequestGroup, ...] = ()
    source_avoid: frozenset[str] = frozenset()


@dataclass(frozen=True)
class _SourceAnswer:
    """What the pool learned about a resize's source while every other host
    was asked: its compute node as its service reported it, enabled (judged
    next, beside the other hosts' candidates), or else the answer already
    known (``judged``: Placement's, or None for a disabled source)."""

    node: host_api.ReportedNode | None = None
    judged: tuple[float, Destination] | None = None


class Scheduler(VerdictMixin, SharedSourceMixin):
    """Filters and weighs Placement's candidates.

    :param client: the Placement client.
    :param conf: a ConfigOpts with the ``[scheduler]`` and ``[placement]``
        groups registered; ``[placement] deployment_name`` says which hosts
        are ours.
    :param db: the :class:`resize_sched.db.api.Database` whose
        ``compute_nodes`` name hosts and hold their inventory; None: every
        such fact is read from Placement (one request per provider).
    :param rng: the random source of ``host_subset_size`` (tests seed one).
    """

    def __init__(
        self,
        client: PlacementClient,
        conf: cfg.ConfigOpts,
        db: Any = None,
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.conf = conf
        self.db = db
        #: The trait on the root provider of every host of this deployment.
        self.owner_trait = owner_trait(conf.placement.deployment_name)
        # NOTE: what the root of every host we may choose has: our mark, and
        # not the disabled one (root_required; Placement leaves the rest out).
        self._usable = (self.owner_trait, "!" + DISABLED_TRAIT)
        self._enabled = ("!" + DISABLED_TRAIT,)
        self._names: dict[str, str] = {}
        self._random = rng or random.Random()
        self._pool: futures.ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def close(self) -> None:
        """Stop the thread pool (it is started again if needed)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    # -- public ---------------------------------------------------------------

    def select_destinations(self, request: SchedulingRequest) -> Selection:
        """Return the chosen host and its alternates.

        :raises NoValidHost: no host can take the request; ``kind`` says
            whether some host could when empty (``deferred``) or none ever
            could (``infeasible``).
        :raises PlacementError: Placement failed (never turned into "no host").
        """
        source = request.source
        source_allowed = (
            source is not None
            and request.allow_same_host
            and source not in request.ignore_providers
        )
        if source_allowed and request.prefer_same_host:
            found = self._ask_source(request)
            # NOTE: the shortcut must not skip the filters: an ignored or not
            # forced source is no more a candidate than any other host (a
            # disabled one the query itself left out).
            if found is not None and self._filter([found], request):
                LOG.debug("Source %s takes the resize; other hosts not asked", source)
                return Selection([found[1]], complete=False)
            source_allowed = False

        wanted = rs.normalize(request.destination_request)
        source_amounts = rs.normalize(request.source_request)
        one_query = source_allowed and source_amounts == wanted
        if source_allowed and not one_query and source_amounts:
            # NOTE: two independent questions: every other host's here; on
            # the pool the source's compute node (a database read) or, for a
            # source no service reports, its own candidates query.
            candidates, answer = self._both(
                lambda: self._query(wanted, request),
                lambda: self._about_source(request, source_amounts),
            )
            scored = self._score(candidates, request, keep_source=False)
            found = answer.judged
            if answer.node is not None:
                found = self._judge_beside(
                    request, source_amounts, answer.node, candidates, scored
                )
            if found is not None:
                scored.append(found)
        else:
            candidates = self._query(wanted, request)
            scored = self._score(candidates, request, keep_source=one_query)
            if source_allowed and not one_query:
                # NOTE: a source that needs nothing more and is among the
                # candidates already passed every check the query makes
                # (owned, enabled, traits, aggregates): it needs no request
                # of its own.
                seen = any(
                    self._root_of(ar, candidates) == source
                    for ar in candidates.allocation_requests
                )
                found = self._ask_source(request, seen=seen)
                if found is not None:
                    scored.append(found)

        allowed = self._filter(scored, request)
        if not allowed:
            raise self._no_valid_host(request, len(scored))
        allowed.sort(key=lambda item: item[0], reverse=True)
        allowed = self._pick_in_subset(allowed)
        chosen = [dest for _, dest in allowed[: self.conf.scheduler.max_attempts]]
        LOG.info(
            "Selected %s with %d alternate(s) out of %d candidate host(s)",
            chosen[0].host,
            len(chosen) - 1,
            len(allowed),
        )
        return Selection(chosen)

    def _pick_in_subset(
        self, ranked: list[tuple[float, Destination]]
    ) -> list[tuple[float, Destination]]:
        """Move one of the best ``host_subset_size`` hosts, at random, to the front.

        The others keep their order, as alternates. A source that needs
        nothing more (weighed infinite) is never displaced: staying is free.
        """
        size = min(self.conf.scheduler.host_subset_size, len(ranked))
        if size <= 1 or ranked[0][0] == _FREE_SOURCE_WEIGHT:
            return ranked
        index = self._random.randrange(size)
        if index:
            ranked = [ranked[index], *ranked[:index], *ranked[index + 1 :]]
        return ranked

    # -- queries ----------------------------------------------------------------

    def _both(self, first: Callable[[], T], second: Callable[[], Any]) -> tuple[T, Any]:
        """Run ``second`` on the pool while ``first`` runs here; both results.

        An error of either is raised (``first``'s when both fail), once
        ``second`` has ended: nothing is left running behind the caller.
        """
        future = self._executor().submit(second)
        try:
            result = first()
        except BaseException:
            futures.wait([future])
            raise
        return result, future.result()

    def _executor(self) -> futures.ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = futures.ThreadPoolExecutor(
                    max_workers=_POOL_SIZE, thread_name_prefix="scheduler"
                )
            return self._pool

    def _query(
        self, amounts: Resources, request: SchedulingRequest, in_tree: str | None = None
    ) -> Candidates:
        groups: tuple[rs.RequestGroup, ...] = ()
        if in_tree is None and request.groups:
            # NOTE: the whole flavor: its numbered groups as such, the rest
            # unnumbered. A source asked for an increase alone (in_tree) asks
            # it unnumbered: where it lands beside the groups it holds is
            # the strategy's (source_placement).
            groups = request.groups
            grouped = rs.add_allocations(*({g.suffix: g.resources} for g in groups))
            amounts = rs.normalize(
                {
                    rc: max(amount - rs.total(grouped).get(rc, 0), 0)
                    for rc, amount in amounts.items()
                }
            )
        required = [
            *sorted(request.required_traits),
            *(f"!{t}" for t in sorted(request.forbidden_traits)),
        ]
        # NOTE: granular arguments only when there are groups: a flat request
        # is the same call as ever.
        granular: dict[str, Any] = (
            {"groups": groups, "group_policy": request.group_policy} if groups else {}
        )
        return hosts.unless_unknown(
            self.client,
            self.owner_trait,
            lambda: self.client.get_allocation_candidates(
                amounts,
                required=required,
                member_of=request.member_of,
                in_tree=in_tree,
                root_required=self._usable,
                limit=None if in_tree else self.conf.scheduler.max_placement_results,
                **granular,
            ),
            Candidates([], {}),
        )

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

    def _about_source(self, request: SchedulingRequest, amounts: Resources) -> _SourceAnswer:
        """The source's compute node when it can be judged from it, else
        Placement's answer for the source alone (``in_tree``)."""
        if request.source_groups:
            return _SourceAnswer(judged=self._judge_groups(request, amounts))
        if set(request.source_placement) - {request.source}:
            return _SourceAnswer(judged=self._judge_tree(request))
        node = self._reported_source(request)
        if node is not None and node.disabled and not lacks_a_class(node, amounts):
            LOG.debug("Source %s is disabled", node.host)
            return _SourceAnswer()  # judged: it takes no new work
        if node is not None and not lacks_a_class(node, amounts):
            return _SourceAnswer(node=node)
        # NOTE: a class the source's root lacks may be on a sharing provider
        # (its disk pool), which in_tree=<source> never sees: see
        # resize_sched.scheduler.source. A flat host never gets here.
        pooled = self._source_on_pools(request, amounts, node)
        if pooled is not None:
            judged = None
            if pooled.placement is not None:
                weight = self.conf.scheduler.ram_weight_multiplier * pooled.free_ram
                host = self._host_name(pooled.source)
                dest = Destination(pooled.source, host, pooled.placement, same_host=True)
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
        required = [
            *sorted(request.required_traits),
            *(f"!{t}" for t in sorted(request.forbidden_traits)),
        ]
        candidates = hosts.unless_unknown(
            self.client,
            self.owner_trait,
            lambda: self.client.get_allocation_candidates(
                rest,
                required=required,
                member_of=request.member_of,
                in_tree=source,
                root_required=self._usable,
                groups=groups,
                group_policy=request.group_policy,
            ),
            Candidates([], {}),
        )
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
        free_ram = 0.0
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
            if provider == source and rs.MEMORY_MB in inventory:
                free_ram = rs.capacity(inventory[rs.MEMORY_MB]) - used.get(rs.MEMORY_MB, 0)
        host = node.host if node is not None else self._host_name(source)
        weight = self.conf.scheduler.ram_weight_multiplier * free_ram
        placement = rs.normalize_allocations(request.source_placement)
        return (weight, Destination(source, host, placement, same_host=True))

    def _reported_source(self, request: SchedulingRequest) -> host_api.ReportedNode | None:
        """The source's compute node, when the source can be judged from it
        (if its root has every class asked for: see
        :func:`~resize_sched.scheduler.source.lacks_a_class`).

        A candidates query limited to the source costs Placement as much as
        one over the whole cloud. When the source is a host whose compute
        service reports it (its inventory and whether it is disabled are in
        ``compute_nodes`` and ``services``), its usage is all that is left to
        know, and often not even that (see :meth:`_judge_beside`).

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
        node: host_api.ReportedNode,
        candidates: Candidates,
        scored: list[tuple[float, Destination]],
    ) -> tuple[float, Destination] | None:
        """Judge the reported source beside every other host's candidates.

        * A source among the candidates has room for the whole request, so
          for ``amounts`` too: its summary weighs it, no request more.
        * A source that, however little it holds, would weigh less than every
          host that can be chosen or stand as an alternate (the best
          ``max(max_attempts, host_subset_size)`` of the others) could never
          be in the answer: it is not asked about.
        * Any other is judged from its usage (one cheap request).
        """
        source = request.source
        assert source is not None
        summary = candidates.provider_summaries.get(source)
        if summary is not None and any(
            self._root_of(ar, candidates) == source for ar in candidates.allocation_requests
        ):
            memory = summary.get("resources", {}).get(rs.MEMORY_MB, {})
            free_ram = memory.get("capacity", 0) - memory.get("used", 0)
            return self._source_destination(node, amounts, free_ram)
        best = self._weight_bound(node, request, amounts)
        needed = max(self.conf.scheduler.max_attempts, self.conf.scheduler.host_subset_size)
        rivals = sorted((w for w, _ in self._filter(scored, request)), reverse=True)
        if len(rivals) >= needed and best < rivals[needed - 1]:
            LOG.debug(
                "Source %s not asked: at best it weighs %s, below the %d best other hosts",
                node.host,
                best,
                needed,
            )
            return None
        return self._judge_from_usage(request, amounts, node)

    def _weight_bound(
        self, node: host_api.ReportedNode, request: SchedulingRequest, amounts: Resources
    ) -> float:
        """The most the source can weigh: its free RAM is at least what the
        request adds there (or it would not fit) and at most its capacity
        less what the resize and our settled servers there hold."""
        memory = node.inventory.get(rs.MEMORY_MB)
        held = request.source_holds.get(rs.MEMORY_MB, 0) + node.settled.get(rs.MEMORY_MB, 0)
        most = rs.capacity(memory) - held if memory else 0
        least = amounts.get(rs.MEMORY_MB, 0)
        multiplier = self.conf.scheduler.ram_weight_multiplier
        return max(multiplier * least, multiplier * most)

    def _judge_from_usage(
        self, request: SchedulingRequest, amounts: Resources, node: host_api.ReportedNode
    ) -> tuple[float, Destination] | None:
        """Whether the reported source has ``amounts`` free, from its usage
        (``GET /resource_providers/{uuid}/usages``, a fraction of a candidates
        query's cost). The claim that follows is judged by Placement all the
        same: a usage that changed meanwhile only means a refused claim, and
        the next alternate."""
        source = request.source
        assert source is not None
        try:
            used = self.client.get_usages(source)
        except exception.PlacementNotFound:
            return None  # gone: a claim there would be refused
        if not _fits(node.inventory, amounts, used):
            LOG.debug("Source %s lacks %s", node.host, rs.format_resources(amounts))
            return None
        memory = node.inventory.get(rs.MEMORY_MB)
        free_ram = rs.capacity(memory) - used.get(rs.MEMORY_MB, 0) if memory else 0
        return self._source_destination(node, amounts, free_ram)

    def _source_destination(
        self, node: host_api.ReportedNode, amounts: Resources, free_ram: float
    ) -> tuple[float, Destination]:
        source = node.uuid
        weight = self.conf.scheduler.ram_weight_multiplier * free_ram
        return (weight, Destination(source, node.host, rs.on(source, amounts), same_host=True))

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

    # -- filtering and weighing ---------------------------------------------------

    def _score(
        self, candidates: Candidates, request: SchedulingRequest, *, keep_source: bool
    ) -> list[tuple[float, Destination]]:
        """One destination per host (its first allocation request), weighed."""
        multiplier = self.conf.scheduler.ram_weight_multiplier
        summaries = candidates.provider_summaries
        firsts: dict[str, tuple[int, Allocations]] = {}
        for index, allocation_request in enumerate(candidates.allocation_requests):
            root = self._root_of(allocation_request, candidates)
            if root not in firsts:
                firsts[root] = (index, allocation_request)
        if not keep_source:
            firsts.pop(request.source, None)  # type: ignore[arg-type]
        names = self._host_names(firsts)
        out: list[tuple[float, Destination]] = []
        for root, (index, allocation_request) in firsts.items():
            memory = summaries.get(root, {}).get("resources", {}).get(rs.MEMORY_MB, {})
            free_ram = memory.get("capacity", 0) - memory.get("used", 0)
            # NOTE: ties keep Placement's order (earlier candidates first).
            weight = multiplier * free_ram - index * 1e-9
            same_host = root == request.source
            mappings = None
            if request.groups or request.source_groups:
                # NOTE: which provider took which group; recorded with the claim.
                found = candidates.mappings[index] if index < len(candidates.mappings) else {}
                mappings = {suffix: list(rps) for suffix, rps in found.items()}
            dest = Destination(root, names[root], allocation_request, same_host, mappings)
            out.append((weight, dest))
        return out

    @staticmethod
    def _root_of(allocation_request: Allocations, candidates: Candidates) -> str:
        """The root of the host a candidate is on.

        A sharing provider (``MISC_SHARES_VIA_AGGREGATE``, e.g. a disk pool)
        is a root of its own tree: it names no host unless the candidate
        holds nothing else.
        """
        shared = None
        for rp in allocation_request:
            summary = candidates.provider_summaries.get(rp) or {}
            root = summary.get("root_provider_uuid") or rp
            if SHARING_TRAIT in summary.get("traits", ()) and root == rp:
                shared = shared or rp
                continue
            return root
        if shared is not None:
            return shared
        raise ValueError("empty allocation request")

    def _filter(
        self, scored: list[tuple[float, Destination]], request: SchedulingRequest
    ) -> list[tuple[float, Destination]]:
        kept = []
        for weight, dest in scored:
            if dest.provider in request.ignore_providers:
                reason = "already tried"
            elif dest.host in request.ignore_hosts:
                reason = "in ignore_hosts"
            elif request.force_hosts and dest.host not in request.force_hosts:
                reason = "not in force_hosts"
            else:
                kept.append((weight, dest))
                continue
            LOG.debug("Host %s filtered out: %s", dest.host, reason)
        return kept

    def _host_name(self, provider: str) -> str:
        return self._host_names((provider,))[provider]

    def _host_names(self, providers: Iterable[str]) -> dict[str, str]:
        """The host name of each provider (its uuid when it has none).

        Names are cached: a provider's name is its host's for good (a host
        whose provider is re-created gets a new uuid). Those not cached yet
        are read from ``compute_nodes`` in one query; a provider no compute
        service has reported yet costs one ``GET /resource_providers/{uuid}``.
        """
        names = self._names
        missing = [rp for rp in providers if rp not in names]
        if missing:
            if self.db is not None:
                known = host_api.compute_node_inventories(self.db, missing)
                for rp, (host, _inventory) in known.items():
                    names[rp] = host
                missing = [rp for rp in missing if rp not in known]
            for rp in missing:
                names[rp] = self._read_name(rp)
        return {rp: names[rp] for rp in providers}

    def _read_name(self, provider: str) -> str:
        try:
            return self.client.get_resource_provider(provider)["name"]
        except exception.PlacementNotFound:
            # NOTE: gone since the query named it; its uuid names it well
            # enough for a claim that will be refused.
            return provider


def flavor_filters(flavor: dict[str, Any]) -> dict[str, Any]:
    """The :class:`SchedulingRequest` fields a flavor's extra specs set
    beside its amounts: traits, aggregates and numbered groups.

    :raises ValueError: malformed extra specs (see :func:`rs.stored_request`:
        a stored snapshot is read as it was claimed).
    """
    request = rs.stored_request(flavor)
    return {
        "required_traits": request.required_traits,
        "forbidden_traits": request.forbidden_traits,
        "member_of": request.member_of,
        "groups": request.groups,
        "group_policy": request.group_policy,
    }
