"""The filters and weighers: which destinations pass, and in what order.

:class:`RankingMixin` gives the :class:`~resize_sched.scheduler.manager.Scheduler`
its filter and weigher chains (loaded from ``[filter_scheduler]``, reloaded on
SIGHUP), the request's own host lists (ignored, forced, already tried), the
enabled filters run on one host state per destination, the weighing, and the
random pick among the best ``host_subset_size``. None of it asks Placement:
the host states are built from the database (a fixed number of queries).
"""

from __future__ import annotations

import random
import threading
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.scheduler.filters import FilterChain
from resize_sched.scheduler.host_state import HostState, build_host_states
from resize_sched.scheduler.node_cache import NodeCache
from resize_sched.scheduler.request import Destination, SchedulingRequest
from resize_sched.scheduler.source import _FREE_SOURCE_WEIGHT
from resize_sched.scheduler.weights import WeigherChain

LOG = logging.getLogger(__name__)

#: A destination that passed the filters, with its preliminary weight (free
#: RAM times the RAM multiplier; infinite for a source that needs nothing
#: more) and its host state.
_Passed = tuple[float, Destination, HostState]


class RankingMixin:
    """Filtering and weighing for the :class:`~resize_sched.scheduler.manager.Scheduler`
    it is mixed into; uses its ``conf``, ``db``, ``nodes`` (the compute node
    cache), ``_random`` and the chains' slot ``_chains`` with its lock."""

    conf: cfg.ConfigOpts
    db: Any
    nodes: NodeCache
    _random: random.Random
    _chains: tuple[FilterChain, WeigherChain] | None
    _chains_lock: threading.Lock

    def load_plugins(self) -> tuple[FilterChain, WeigherChain]:
        """Load ``[filter_scheduler] enabled_filters`` and ``weight_classes``.

        :raises SchedulerPluginNotFound: a name is not installed (the
            conductor calls this at start, so it stops with the name).
        """
        fs = self.conf.filter_scheduler
        chains = (
            FilterChain(self.conf, fs.enabled_filters),
            WeigherChain(self.conf, fs.weight_classes),
        )
        with self._chains_lock:
            self._chains = chains
        return chains

    def reload_plugins(self) -> bool:
        """Load the filters and weighers the options name now (SIGHUP).

        A name that is not installed is refused with an ERROR and the running
        filters and weighers are kept.

        :returns: whether the new lists are in force.
        """
        try:
            self.load_plugins()
        except exception.ConfigurationError as exc:
            running = self._plugins()
            LOG.error(
                "Reload: [filter_scheduler] refused, keeping filters %s and weighers %s: %s",
                ", ".join(running[0].names) or "none",
                ", ".join(running[1].names) or "none",
                exc,
            )
            return False
        return True

    def _plugins(self) -> tuple[FilterChain, WeigherChain]:
        chains = self._chains
        return chains if chains is not None else self.load_plugins()

    def _pick_in_subset(
        self, ranked: list[tuple[float, Destination]]
    ) -> list[tuple[float, Destination]]:
        """Move one of the best ``host_subset_size`` hosts, at random, to the front.

        The others keep their order, as alternates. A source that needs
        nothing more (weighed infinite) is never displaced: staying is free.
        """
        size = min(self.conf.filter_scheduler.host_subset_size, len(ranked))
        if size <= 1 or ranked[0][0] == _FREE_SOURCE_WEIGHT:
            return ranked
        index = self._random.randrange(size)
        if index:
            ranked = [ranked[index], *ranked[:index], *ranked[index + 1 :]]
        return ranked

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

    def _policies(
        self,
        scored: list[tuple[float, Destination]],
        request: SchedulingRequest,
        removed: list[tuple[str, int]] | None = None,
    ) -> list[_Passed]:
        """The destinations the request's host lists (:meth:`_filter`) and
        the enabled filters keep, each with its host state.

        :param removed: gets (filter name, hosts removed) for each filter
            that removed any.
        """
        kept = self._filter(scored, request)
        if not kept:
            return []
        filters, weighers = self._plugins()
        needs = filters.needs_for(request) | weighers.needs_for(request)
        states = build_host_states(self.db, [dest for _, dest in kept], needs, self.nodes)
        passed, counts = filters.run(states, request)
        if removed is not None:
            removed.extend(counts)
        by_state = {id(state): item for state, item in zip(states, kept, strict=True)}
        return [(*by_state[id(state)], state) for state in passed]

    def _weigh(
        self, passed: list[_Passed], request: SchedulingRequest
    ) -> list[tuple[float, Destination]]:
        """The destinations best first, weighed by the enabled weighers.

        A source that needs nothing more stays first (infinite weight) and
        takes no part in the scaling; equal weights keep Placement's order
        (the source, asked apart, after its equals).
        """
        _, weighers = self._plugins()
        free = [item for item in passed if item[0] == _FREE_SOURCE_WEIGHT]
        rest = [item for item in passed if item[0] != _FREE_SOURCE_WEIGHT]
        weights = weighers.weigh([state for _, _, state in rest], request)
        ranked = [(_FREE_SOURCE_WEIGHT, dest) for _, dest, _ in free]
        order = sorted(range(len(rest)), key=lambda i: -weights[i])  # NOTE: stable
        ranked += [(weights[i], rest[i][1]) for i in order]
        return ranked
