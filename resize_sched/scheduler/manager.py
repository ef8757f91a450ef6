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
  for what the strategy says: two requests. For a source whose compute
  service reports it, the second is the source's usage, judged against the
  inventory and disabled flag that service reported (a candidates query
  limited to one tree costs Placement as much as one over the whole cloud);
  for any other, or when traits or aggregates are asked for, it is a
  candidates query with ``in_tree=<source>``;
* with ``[resize] prefer_same_host`` the source is asked first and, when it
  fits, is returned alone (``Selection.complete`` is false) without asking
  about any other host.

The two requests of the second case do not depend on each other: the source's
runs on a small thread pool of the scheduler while the calling thread asks
about every other host, so a resize waits for one round trip, not two.

Only hosts of this deployment that take new work are ever candidates, and
Placement itself leaves the others out: every query asks for roots with the
deployment's owner trait and without ``COMPUTE_STATUS_DISABLED``
(``root_required``), so a host registered by another service, or by another
deployment sharing the Placement, costs nothing and is never seen (see
:mod:`resize_sched.scheduler.hosts` for disabling a host).

What the scheduler knows of its hosts without asking Placement comes from the
``compute_nodes`` table, which the compute services' reports keep current:
the host name of each provider, and the inventory the verdict of a failure
(could the request ever fit, empty?) is judged on. A provider the table does
not know costs one request of its own, never a wrong answer.

Among hosts of equal standing, racing conductors would all pick the same
first one; ``[scheduler] host_subset_size`` makes each pick at random among
the best N instead (N = 1 by default: always the best).
"""

import math
import random
import threading
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, TypeVar

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import host_api
from resize_sched.placement.client import (
    DISABLED_TRAIT,
    Candidates,
    PlacementClient,
    owner_trait,
)
from resize_sched.resources import Allocations, Resources
from resize_sched.scheduler import hosts

LOG = logging.getLogger(__name__)

T = TypeVar("T")

#: Threads of a scheduler's pool: each resize with a separate source query
#: uses one for as long as that query takes.
_POOL_SIZE = 4

#: What :meth:`Scheduler._judge_source` answers when Placement must be asked.
_ASK_PLACEMENT = object()

#: The weight of a source that needs nothing more (a shrink under max_flavor):
#: staying put costs nothing and moves no disk, so it always comes first.
_FREE_SOURCE_WEIGHT = math.inf


@dataclass(frozen=True)
class Destination:
    """A host that can take the request, with what to claim on it."""

    provider: str
    host: str
    allocation_request: Allocations
    same_host: bool = False


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

    :ivar destination_request: amounts every host but the source must have free.
    :ivar source: the source provider of a resize (``None`` for a build).
    :ivar source_request: what the source must have free (empty: it fits
        without asking); ignored without ``source``.
    :ivar ignore_hosts: host names never to choose.
    :ivar force_hosts: when given, only these host names may be chosen.
    :ivar ignore_providers: provider uuids never to choose (hosts already tried).
    """

    destination_request: Resources
    required_traits: frozenset[str] = frozenset()
    member_of: tuple[str, ...] = ()
    source: str | None = None
    source_request: Resources = field(default_factory=dict)
    allow_same_host: bool = False
    prefer_same_host: bool = False
    ignore_hosts: frozenset[str] = frozenset()
    force_hosts: frozenset[str] = frozenset()
    ignore_providers: frozenset[str] = frozenset()


class Scheduler:
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
            # NOTE: two independent requests: the source's on the pool, every
            # other host's here, so the resize waits for the slower only.
            candidates, from_source = self._both(
                lambda: self._query(wanted, request), lambda: self._ask_source(request)
            )
            scored = self._score(candidates, request, keep_source=False)
            if from_source is not None:
                scored.append(from_source)
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
        return hosts.unless_unknown(
            self.client,
            self.owner_trait,
            lambda: self.client.get_allocation_candidates(
                amounts,
                required=sorted(request.required_traits),
                member_of=request.member_of,
                in_tree=in_tree,
                root_required=self._usable,
                limit=None if in_tree else self.conf.scheduler.max_placement_results,
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
        judged = self._judge_source(request, amounts)
        if judged is not _ASK_PLACEMENT:
            return judged  # type: ignore[return-value]
        candidates = self._query(amounts, request, in_tree=source)
        scored = self._score(candidates, request, keep_source=True)
        return scored[0] if scored else None

    def _judge_source(
        self, request: SchedulingRequest, amounts: Resources
    ) -> tuple[float, Destination] | None | object:
        """Whether the source has ``amounts`` free, from its usage alone.

        A candidates query limited to the source costs Placement as much as
        one over the whole cloud. When the source is a host whose compute
        service reports it (its inventory and whether it is disabled are in
        ``compute_nodes`` and ``services``), its usage (``GET
        /resource_providers/{uuid}/usages``, a fraction of the cost) is all
        that is left to know. The claim that follows is judged by Placement
        all the same: a usage that changed meanwhile only means a refused
        claim, and the next alternate.

        :returns: the source weighed, None when it cannot take the request,
            or ``_ASK_PLACEMENT`` when it must be asked the usual way (no
            database, no report, traits or aggregates asked for, a class the
            root provider does not have, e.g. on a child provider).
        """
        source = request.source
        assert source is not None
        if self.db is None or request.required_traits or request.member_of:
            return _ASK_PLACEMENT
        node = host_api.compute_node_for_source(self.db, source)
        if node is None or any(rc not in node[1] for rc in amounts):
            return _ASK_PLACEMENT
        host, inventory, disabled = node
        self._names[source] = host
        if disabled:
            LOG.debug("Source %s is disabled", host)
            return None
        try:
            used = self.client.get_usages(source)
        except exception.PlacementNotFound:
            return None  # gone: a claim there would be refused
        if not _fits(inventory, amounts, used):
            LOG.debug("Source %s lacks %s", host, rs.format_resources(amounts))
            return None
        memory = inventory.get(rs.MEMORY_MB)
        free_ram = rs.capacity(memory) - used.get(rs.MEMORY_MB, 0) if memory else 0
        weight = self.conf.scheduler.ram_weight_multiplier * free_ram
        return (weight, Destination(source, host, rs.on(source, amounts), same_host=True))

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
            out.append((weight, Destination(root, names[root], allocation_request, same_host)))
        return out

    @staticmethod
    def _root_of(allocation_request: Allocations, candidates: Candidates) -> str:
        for rp in allocation_request:
            summary = candidates.provider_summaries.get(rp)
            return (summary and summary.get("root_provider_uuid")) or rp
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

    # -- failure ----------------------------------------------------------------

    def no_valid_host(self, request: SchedulingRequest, found: int = 0) -> exception.NoValidHost:
        """The error for a request nothing could be claimed for: ``infeasible``
        when no allowed host could hold it even empty (inventory constraints
        such as ``max_unit`` included), else ``deferred``."""
        return self._no_valid_host(request, found)

    def _no_valid_host(self, request: SchedulingRequest, found: int) -> exception.NoValidHost:
        """Tell "no room now" from "could never fit"."""
        wanted = rs.format_resources(request.destination_request)
        if self._could_ever_fit(request):
            return exception.NoValidHost(
                kind=exception.NoValidHost.DEFERRED,
                reason=f"no host has {wanted} free now ({found} candidate(s) before "
                "filtering); retry when room is freed",
            )
        return exception.NoValidHost(
            kind=exception.NoValidHost.INFEASIBLE,
            reason=f"no allowed host could hold {wanted}"
            + (
                f" with traits {sorted(request.required_traits)}"
                if request.required_traits
                else ""
            )
            + " even when empty",
        )

    def _could_ever_fit(self, request: SchedulingRequest) -> bool:
        """Whether any allowed host, empty, could hold the request.

        Allowed hosts are those the candidates query could return: ours,
        enabled, with the required traits, in the aggregates asked for. One
        provider listing says which they are (whether a host is disabled
        lives in Placement alone, so even a request with no trait or
        aggregate of its own needs it); each one's inventory is the one its
        compute service last reported (``compute_nodes``). A provider with
        no report yet costs one inventory request, read last, so that a
        missing report never makes a wrong "infeasible". Without a database,
        every provider's inventory is read from Placement.
        """
        wanted = rs.normalize(request.destination_request)
        providers = hosts.list_owned(
            self.client,
            self.owner_trait,
            required=[*self._enabled, *sorted(request.required_traits)],
            member_of=request.member_of,
        )
        allowed = []
        for rp in providers:
            self._names[rp["uuid"]] = rp["name"]
            name = rp["name"]
            if (
                (rp["uuid"] == request.source and not request.allow_same_host)
                or name in request.ignore_hosts
                or (request.force_hosts and name not in request.force_hosts)
            ):
                continue
            allowed.append(rp["uuid"])
        if not allowed:
            return False
        reported = {}
        if self.db is not None:
            # NOTE: every node at once: one query whatever the cloud's size,
            # and the table holds this deployment's hosts only.
            reported = host_api.compute_node_inventories(self.db)
        unreported = []
        for rp in allowed:
            if rp not in reported:
                unreported.append(rp)
            elif _fits_empty(reported[rp][1], wanted):
                return True
        for rp in unreported:
            LOG.debug("Provider %s has no compute node report; reading its inventory", rp)
            try:
                inventories, _ = self.client.get_inventories(rp)
            except exception.PlacementNotFound:
                continue  # deleted since the listing
            if _fits_empty(inventories, wanted):
                return True
        return False


def _fits_empty(inventories: dict[str, dict], amounts: Resources) -> bool:
    """Whether a provider with ``inventories`` and no usage could hold ``amounts``."""
    return _fits(inventories, amounts)


def _fits(inventories: dict[str, dict], amounts: Resources, used: Resources | None = None) -> bool:
    """Whether a provider with ``inventories`` and ``used`` could hold ``amounts`` more.

    Placement's rules: within capacity, and min_unit <= amount <= max_unit with
    amount a multiple of step_size.
    """
    used = used or {}
    for rc, amount in amounts.items():
        inv = inventories.get(rc)
        if inv is None:
            return False
        if used.get(rc, 0) + amount > rs.capacity(inv) or amount > inv.get("max_unit", amount):
            return False
        if amount < inv.get("min_unit", 1) or amount % inv.get("step_size", 1):
            return False
    return True
