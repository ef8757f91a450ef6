"""Host filters: each says whether one candidate host may take a request.

A filter is a :class:`BaseHostFilter` subclass installed as an entry point of
the ``resize_sched.scheduler.filters`` namespace under its class name (Nova's
names: ``ComputeFilter``, ``ServerGroupAffinityFilter``...), and enabled by
``[filter_scheduler] enabled_filters``. :class:`FilterChain` runs the enabled
ones in order on the candidates' host states; a host one of them refuses is
not shown to the next, and the chain counts how many each removed, which the
NoValidHost of an empty answer says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from oslo_log import log as logging

from resize_sched.scheduler import plugins

if TYPE_CHECKING:
    from oslo_config import cfg

    from resize_sched.scheduler.host_state import HostState
    from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


class BaseHostFilter(plugins.Plugin):
    """One filter. Subclasses implement :meth:`host_passes`.

    :cvar needs: as :class:`~resize_sched.scheduler.plugins.Plugin`'s.
    :cvar run_filter_once_per_request: the answer depends on the request
        alone, not on servers placed earlier in the same request (Nova's
        flag; each request here places one server, so it only documents).
    """

    run_filter_once_per_request: ClassVar[bool] = False

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        """Whether ``host_state`` may take ``request``."""
        raise NotImplementedError

    def passes_every_host(self, request: SchedulingRequest) -> bool:
        """Whether every host passes for ``request``, whatever its state (the
        request asks nothing this filter checks): then :meth:`filter_all`
        looks at no host. False by default."""
        return False

    def filter_all(
        self, host_states: Iterable[HostState], request: SchedulingRequest
    ) -> list[HostState]:
        """The host states that pass, in their order."""
        if self.passes_every_host(request):
            return list(host_states)
        return [h for h in host_states if self.host_passes(h, request)]


class FilterChain:
    """The enabled filters, in order.

    :param conf: the configuration each filter reads its options from.
    :param names: filter names (``[filter_scheduler] enabled_filters``).
    :raises SchedulerPluginNotFound: a name is not installed.
    """

    def __init__(self, conf: cfg.ConfigOpts, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.filters: list[BaseHostFilter] = plugins.load_configured(
            plugins.FILTERS, self.names, BaseHostFilter, conf
        )

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        """What the host states must carry for ``request``."""
        return frozenset().union(*(f.needs_for(request) for f in self.filters))

    def run(
        self, host_states: list[HostState], request: SchedulingRequest
    ) -> tuple[list[HostState], list[tuple[str, int]]]:
        """The host states every filter passes, and how many each filter removed.

        :returns: (kept, [(filter name, hosts removed)...] for the filters that
            removed any, in the order they ran).
        """
        kept = host_states
        removed: list[tuple[str, int]] = []
        for f in self.filters:
            if not kept:
                break
            before = len(kept)
            kept = f.filter_all(kept, request)
            if len(kept) < before:
                removed.append((f.name, before - len(kept)))
                LOG.debug("Filter %s removed %d host(s)", f.name, before - len(kept))
        return kept, removed
