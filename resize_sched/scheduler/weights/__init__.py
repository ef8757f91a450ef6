"""Host weighers: each ranks the candidate hosts the filters kept.

A weigher is a :class:`BaseHostWeigher` subclass installed as an entry point
of the ``resize_sched.scheduler.weights`` namespace under its class name
(Nova's: ``RAMWeigher``...), enabled by ``[filter_scheduler] weight_classes``.
As in Nova, each weigher's raw values (:meth:`BaseHostWeigher._weigh_object`)
are scaled to 0..1 across the candidates (its lowest to 0, its highest to 1,
all 0 when they are equal), times the weigher's multiplier, and the products
summed into each host's weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from resize_sched.scheduler import plugins

if TYPE_CHECKING:
    from oslo_config import cfg

    from resize_sched.scheduler.host_state import HostState
    from resize_sched.scheduler.request import SchedulingRequest


def normalize(
    values: Sequence[float], minval: float | None = None, maxval: float | None = None
) -> list[float]:
    """Scale ``values`` to 0..1 between ``minval`` and ``maxval`` (their own
    lowest and highest when None); all 0 when the range is empty."""
    if not values:
        return []
    low = min(values) if minval is None else minval
    high = max(values) if maxval is None else maxval
    span = high - low
    if span == 0:
        return [0.0] * len(values)
    return [(v - low) / span for v in values]


class BaseHostWeigher(plugins.Plugin):
    """One weigher. Subclasses implement :meth:`_weigh_object` and name the
    option of their multiplier in :attr:`multiplier_option`.

    :cvar needs: extra facts its host states must carry (as a filter's).
    :cvar minval: a fixed lowest raw value for the scaling (None: the
        candidates' own); ``maxval`` likewise.
    """

    multiplier_option: ClassVar[str | None] = None
    minval: ClassVar[float | None] = None
    maxval: ClassVar[float | None] = None

    def weight_multiplier(self, host_state: HostState | None = None) -> float:
        """The multiplier, ``[filter_scheduler] <multiplier_option>`` (1.0 if none)."""
        if self.multiplier_option is None or self.conf is None:
            return 1.0
        return float(self.conf.filter_scheduler[self.multiplier_option])

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        """The raw weight of one host (higher is better before the multiplier)."""
        raise NotImplementedError

    def weigh_objects(
        self, host_states: Sequence[HostState], request: SchedulingRequest
    ) -> list[float]:
        """Raw weights of every host, in order."""
        return [self._weigh_object(h, request) for h in host_states]

    def neutral(self, request: SchedulingRequest) -> bool:
        """True when it weighs every host alike for ``request`` (a multiplier
        of 0, a group weigher without such a group): then it cannot change
        the order, and the scheduler may rank by the other weighers alone."""
        return self.weight_multiplier() == 0


class WeigherChain:
    """The enabled weighers.

    :raises SchedulerPluginNotFound: a name is not installed.
    """

    def __init__(self, conf: cfg.ConfigOpts, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.weighers: list[BaseHostWeigher] = plugins.load_configured(
            plugins.WEIGHERS, self.names, BaseHostWeigher, conf
        )

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        """What the host states must carry for ``request``."""
        return frozenset().union(
            *(w.needs_for(request) for w in self.weighers if not w.neutral(request))
        )

    def weigh(self, host_states: Sequence[HostState], request: SchedulingRequest) -> list[float]:
        """Each host's weight: the sum over weighers of multiplier x scaled value."""
        totals = [0.0] * len(host_states)
        if len(host_states) < 2:
            return totals  # NOTE: one host: nothing to rank
        for w in self.weighers:
            if w.neutral(request):
                continue
            scaled = normalize(w.weigh_objects(host_states, request), w.minval, w.maxval)
            multiplier = w.weight_multiplier()
            totals = [
                total + multiplier * value for total, value in zip(totals, scaled, strict=True)
            ]
        return totals
