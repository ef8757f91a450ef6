"""The bare floor: what one resize would cost if we did nothing but ask and claim.

One ``GET /allocation_candidates`` for the new flavor, with the very filters
the scheduler sends (our owner trait and not disabled on the root,
``[scheduler] max_placement_results``), then one ``PUT /allocations`` of a
new consumer with the first candidate: two sequential requests, nothing of
ours in between. The consumer is deleted afterwards, outside the timing, so
the cloud is left as it was.

:func:`measure_floor` also times the bare candidates query for a flavor that
fits nowhere (an empty answer), what a failed resize cannot do with less.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from dataclasses import dataclass, field

from oslo_config import cfg

from resize_sched.placement.client import (
    DISABLED_TRAIT,
    INSTANCE,
    ConsumerWrite,
    PlacementClient,
    owner_trait,
)
from resize_sched.resources import Resources


@dataclass
class FloorFigures:
    """Samples of the floor, in milliseconds."""

    query_ms: list[float] = field(default_factory=list)
    claim_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    #: the bare candidates query for a flavor no host can take
    empty_query_ms: list[float] = field(default_factory=list)
    candidates: int = 0
    #: samples that found no candidate (the cloud is full)
    no_candidate: int = 0
    #: the providers the floor claimed on (and released)
    providers: set[str] = field(default_factory=set)

    def merge(self, other: FloorFigures) -> None:
        """Add another batch of samples to these."""
        self.query_ms += other.query_ms
        self.claim_ms += other.claim_ms
        self.total_ms += other.total_ms
        self.empty_query_ms += other.empty_query_ms
        self.candidates = max(self.candidates, other.candidates)
        self.no_candidate += other.no_candidate
        self.providers |= other.providers


def _query(client: PlacementClient, conf: cfg.ConfigOpts, amounts: Resources) -> list:
    trait = owner_trait(conf.placement.deployment_name)
    return client.get_allocation_candidates(
        amounts,
        root_required=(trait, "!" + DISABLED_TRAIT),
        limit=conf.scheduler.max_placement_results,
    ).allocation_requests


def measure_floor(
    client: PlacementClient,
    conf: cfg.ConfigOpts,
    amounts: Resources,
    unfit: Resources,
    samples: int,
) -> FloorFigures:
    """``samples`` floors (query + claim) for ``amounts``, and bare queries for ``unfit``.

    :param client: a Placement client (its request count is not reset).
    :param conf: for the deployment name and ``max_placement_results``.
    :param amounts: what the resize's new flavor asks for.
    :param unfit: what a flavor no host can take asks for.
    """
    figures = FloorFigures()
    for _ in range(samples):
        consumer = str(uuidlib.uuid4())
        started = time.perf_counter()
        candidates = _query(client, conf, amounts)
        queried = time.perf_counter()
        if not candidates:
            figures.no_candidate += 1
            continue
        write = ConsumerWrite(
            allocations=candidates[0],
            project_id="bench-floor",
            user_id="bench-floor",
            generation=None,
            consumer_type=INSTANCE,
        )
        client.put_allocations(consumer, write)
        figures.providers.update(candidates[0])
        claimed = time.perf_counter()
        figures.query_ms.append((queried - started) * 1000)
        figures.claim_ms.append((claimed - queried) * 1000)
        figures.total_ms.append((claimed - started) * 1000)
        figures.candidates = len(candidates)
        client.delete_allocations(consumer)

        started = time.perf_counter()
        _query(client, conf, unfit)
        figures.empty_query_ms.append((time.perf_counter() - started) * 1000)
    return figures
