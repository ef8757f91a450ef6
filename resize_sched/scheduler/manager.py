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
  for the whole new flavor), otherwise from its usage (one cheap request,
  made while the query runs). For any other, or when
  traits or aggregates are asked for, it is a candidates query with
  ``in_tree=<source>`` (one limited to one tree costs Placement as much as
  one over the whole cloud);
* with ``[resize] prefer_same_host`` the source is asked first and, when it
  fits, is returned alone (``Selection.complete`` is false) without asking
  about any other host.

In the second case the source's compute node and usage are read (or its
``in_tree`` query asked) on a small thread pool of the scheduler while the
calling thread asks about every other host, so a resize waits for one round
trip. The usage is read before the query's answer tells whether the source
was among the candidates (then its summary there is used instead): one
light request that may go unused, for a round trip less on every resize.

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

Placement's candidates then go through the filters and weighers
(:mod:`resize_sched.scheduler.ranking`; see ``doc/scheduler.rst``): one
in-memory host state per candidate
(:mod:`resize_sched.scheduler.host_state`, a fixed number of database
queries for all of them, never a Placement request), the
``[filter_scheduler] enabled_filters`` in order, then the ``weight_classes``,
whose values are scaled to 0..1 across the hosts left and summed with their
multipliers. A resize's source is filtered as every other host is (a strict
affinity member's source passes: its group lives there). Ties keep
Placement's order; a source that needs nothing more is always first. When
the filters leave no host, the NoValidHost says which filter removed how many.

Among hosts of equal standing, racing conductors would all pick the same
first one; ``[filter_scheduler] host_subset_size`` makes each pick at random
among the best N instead (N = 1 by default: always the best).
"""

import random
import threading
from collections.abc import Callable, Iterable
from concurrent import futures
from typing import Any, TypeVar

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
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
from resize_sched.scheduler.filters import FilterChain
from resize_sched.scheduler.host_state import free_and_capacity
from resize_sched.scheduler.node_cache import NodeCache
from resize_sched.scheduler.ranking import RankingMixin

# NOTE: the conductor's tasks import flavor_filters from here, where it was first.
from resize_sched.scheduler.request import (
    Destination,
    SchedulingRequest,
    Selection,
    flavor_filters,  # noqa: F401
)
from resize_sched.scheduler.source import SourceMixin
from resize_sched.scheduler.verdict import VerdictMixin
from resize_sched.scheduler.weights import WeigherChain

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: Threads of a scheduler's pool: each resize with a separate source query
#: uses one for as long as that query takes.
_POOL_SIZE = 4


class Scheduler(RankingMixin, VerdictMixin, SourceMixin):
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
        #: the candidates' compute node rows, each kept
        #: ``[scheduler] compute_node_cache_seconds``
        self.nodes = NodeCache(
            db,
            conf.scheduler.compute_node_cache_seconds,
            down_time=lambda: conf.service_down_time,
        )
        self._random = rng or random.Random()
        self._pool: futures.ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._chains: tuple[FilterChain, WeigherChain] | None = None
        self._chains_lock = threading.Lock()

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
        removed: list[tuple[str, int]] = []
        if source_allowed and request.prefer_same_host:
            found = self._ask_source(request)
            # NOTE: the shortcut must not skip the filters: an ignored or not
            # forced source is no more a candidate than any other host (a
            # disabled one the query itself left out), nor one the policies
            # refuse.
            if found is not None and self._policies([found], request):
                LOG.debug("Source %s takes the resize; other hosts not asked", source)
                return Selection([found[1]], complete=False)
            source_allowed = False

        wanted = rs.normalize(request.destination_request)
        source_amounts = rs.normalize(request.source_request)
        one_query = source_allowed and source_amounts == wanted
        before = 0
        if source_allowed and not one_query and source_amounts:
            # NOTE: two independent questions: every other host's here; on
            # the pool the source's compute node (a database read) and its
            # usage or, for a source no service reports, its own candidates
            # query.
            candidates, answer = self._both(
                lambda: self._query(wanted, request),
                lambda: self._about_source(request, source_amounts, beside=True),
            )
            scored = self._score(candidates, request, keep_source=False)
            before = len(scored)
            passed = self._policies(scored, request, removed)
            found = answer.judged
            if answer.node is not None:
                found = self._judge_beside(request, source_amounts, answer, candidates)
            if found is not None:
                before += 1
                passed += self._policies([found], request, removed)
        else:
            candidates = self._query(wanted, request)
            firsts = self._firsts(candidates)
            scored = self._score(candidates, request, keep_source=one_query, firsts=firsts)
            if source_allowed and not one_query:
                # NOTE: a source that needs nothing more and is among the
                # candidates already passed every check the query makes
                # (owned, enabled, traits, aggregates): it needs no request
                # of its own.
                found = self._ask_source(request, seen=source in firsts)
                if found is not None:
                    scored.append(found)
            before = len(scored)
            passed = self._policies(scored, request, removed)

        if not passed:
            raise self._no_valid_host(request, before, removed)
        allowed = self._pick_in_subset(self._weigh(passed, request))
        chosen = [dest for _, dest in allowed[: self.conf.scheduler.max_attempts]]
        LOG.info(
            "Selected %s with %d alternate(s) out of %d candidate host(s)",
            chosen[0].host,
            len(chosen) - 1,
            len(allowed),
        )
        return Selection(chosen)

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
        self,
        amounts: Resources,
        request: SchedulingRequest,
        in_tree: str | None = None,
        groups: tuple[rs.RequestGroup, ...] = (),
    ) -> Candidates:
        """Placement's candidates for ``amounts`` with the request's traits,
        aggregates and our hosts' root filter.

        :param in_tree: limit to one tree (a resize's source), unlimited count.
        :param groups: numbered groups asked beside ``amounts`` (which then is
            the unnumbered rest); by default, with no ``in_tree``, the
            request's own groups, taken out of ``amounts``.
        """
        if not groups and in_tree is None and request.groups:
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
                member_of=(
                    request.member_of
                    if in_tree
                    else (*request.member_of, *request.policy_member_of)
                ),
                in_tree=in_tree,
                root_required=self._usable,
                limit=None if in_tree else self.conf.scheduler.max_placement_results,
                **granular,
            ),
            Candidates([], {}),
        )

    # -- candidates -------------------------------------------------------------

    @classmethod
    def _firsts(cls, candidates: Candidates) -> dict[str, tuple[int, Allocations]]:
        """Each host's first allocation request (with its index), in
        Placement's order: root provider -> (index, allocation request)."""
        root_of = cls._root_of
        summaries = candidates.provider_summaries
        firsts: dict[str, tuple[int, Allocations]] = {}
        for index, allocation_request in enumerate(candidates.allocation_requests):
            if len(allocation_request) == 1:
                # NOTE: the common case, a candidate all on one provider: its
                # tree's root, whatever its traits (a sharing provider alone
                # is its own root), as _root_of would say, without the loop.
                for rp in allocation_request:
                    summary = summaries.get(rp)
                    root = (summary.get("root_provider_uuid") if summary else None) or rp
            else:
                root = root_of(allocation_request, candidates)
            if root not in firsts:
                firsts[root] = (index, allocation_request)
        return firsts

    def _score(
        self,
        candidates: Candidates,
        request: SchedulingRequest,
        *,
        keep_source: bool,
        firsts: dict[str, tuple[int, Allocations]] | None = None,
    ) -> list[tuple[float, Destination]]:
        """One destination per host (its first allocation request), with its
        preliminary weight (free RAM times the RAM multiplier: what the
        source's judgement compares) and its free amounts.

        :param firsts: :meth:`_firsts` of ``candidates``, when the caller
            has it already.
        """
        multiplier = self.conf.filter_scheduler.ram_weight_multiplier
        summaries = candidates.provider_summaries
        if firsts is None:
            firsts = self._firsts(candidates)
        if not keep_source and request.source in firsts:
            firsts = dict(firsts)
            del firsts[request.source]  # type: ignore[arg-type]
        names = self._host_names(firsts)
        grouped = bool(request.groups or request.source_groups)
        all_mappings = candidates.mappings
        source = request.source
        memory = rs.MEMORY_MB
        out: list[tuple[float, Destination]] = []
        for root, (index, allocation_request) in firsts.items():
            free, total = free_and_capacity(summaries.get(root))
            mappings = None
            if grouped:
                # NOTE: which provider took which group; recorded with the claim.
                found = all_mappings[index] if index < len(all_mappings) else {}
                mappings = {suffix: list(rps) for suffix, rps in found.items()}
            dest = Destination(
                root,
                names[root],
                allocation_request,
                root == source,
                mappings,
                free=free,
                total=total,
            )
            out.append((multiplier * free.get(memory, 0), dest))
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
