"""The oracle: could a resize have succeeded, had the server's own old
allocation not counted?

Judged from a snapshot of Placement's usage taken when the resize arrives,
before any strategy touches anything, and from nothing a strategy computes.
With ``used`` a host's usage, ``capacity`` its ``(total - reserved) *
allocation_ratio`` and ``old`` and ``new`` the two flavors' amounts, class by
class:

* the **source** fits when ``used - old + new <= capacity`` in every class
  (the room the server would leave is counted as free);
* **another host** fits when ``used + new <= capacity`` in every class;
* the resize is **feasible** when the source fits or another host does
  (``[resize] allow_same_host`` is on, as by default);
* it is a **same-host-full** case (Nova bug 1790204's) when it is feasible
  only through the room the server leaves: the source fits, no other host
  does, and the source lacks ``new`` on top of what it holds
  (``used + new > capacity``). Nova's claim (``legacy``) asks for exactly
  that, so it must fail there.

The snapshot is read straight from the embedded Placement's own database
(its ``allocations`` and ``inventories`` tables, one query each), within
one turn of the worker (:mod:`~resize_sched.simulate.interleave`): it is
exactly what Placement holds at that moment, costs no API request, and
shares no code with the scheduler or the strategies.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass

from resize_sched import resources as rs


class Judged:
    """What the oracle's three answers for a resize mean (see the module's
    docstring); mixed into whatever carries them."""

    source_fits: bool
    other_fits: bool
    source_free: bool

    @property
    def feasible(self) -> bool:
        return self.source_fits or self.other_fits

    @property
    def same_host_full(self) -> bool:
        return self.source_fits and not self.other_fits and not self.source_free


@dataclass(frozen=True)
class Verdict(Judged):
    """The oracle's answer for one resize."""

    source_fits: bool
    other_fits: bool
    #: the source has ``new`` free even with the server's ``old`` counted
    source_free: bool = False


def source_fits(
    capacity: Mapping[str, int],
    used: Mapping[str, int],
    old: Mapping[str, int],
    new: Mapping[str, int],
) -> bool:
    """Whether the source has room for ``new`` once the server's ``old`` is not counted.

    :param capacity: the source's capacity per class.
    :param used: the source's usage, the server's ``old`` included.
    """
    return all(
        used.get(rc, 0) - old.get(rc, 0) + amount <= capacity.get(rc, 0)
        for rc, amount in new.items()
        if amount
    )


def host_fits(
    capacity: Mapping[str, int], used: Mapping[str, int], new: Mapping[str, int]
) -> bool:
    """Whether a host with ``used`` of ``capacity`` has ``new`` free."""
    return all(
        used.get(rc, 0) + amount <= capacity.get(rc, 0) for rc, amount in new.items() if amount
    )


def judge(
    capacities: Mapping[str, Mapping[str, int]],
    usages: Mapping[str, Mapping[str, int]],
    source: str,
    old: Mapping[str, int],
    new: Mapping[str, int],
) -> Verdict:
    """The verdict from every host's capacity and usage.

    :param capacities: provider -> capacity per class, for every host.
    :param usages: provider -> usage per class (a host missing holds nothing).
    :param source: the server's host.
    """
    fits_source = source_fits(capacities[source], usages.get(source, {}), old, new)
    fits_other = any(
        host_fits(capacity, usages.get(rp, {}), new)
        for rp, capacity in capacities.items()
        if rp != source
    )
    free = host_fits(capacities[source], usages.get(source, {}), new)
    return Verdict(fits_source, fits_other, free)


_USAGE = """
    SELECT rp.uuid, rc.name, SUM(a.used)
    FROM allocations a
    JOIN resource_providers rp ON rp.id = a.resource_provider_id
    JOIN resource_classes rc ON rc.id = a.resource_class_id
    GROUP BY rp.uuid, rc.name
"""
_CAPACITY = """
    SELECT rp.uuid, rc.name, i.total, i.reserved, i.allocation_ratio
    FROM inventories i
    JOIN resource_providers rp ON rp.id = i.resource_provider_id
    JOIN resource_classes rc ON rc.id = i.resource_class_id
"""


def _read(db_path: str, query: str) -> list[tuple]:
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return connection.execute(query).fetchall()
    finally:
        connection.close()


def usages(db_path: str) -> dict[str, rs.Resources]:
    """Every provider's usage, class by class, from Placement's SQLite file."""
    out: dict[str, rs.Resources] = {}
    for rp, rc, used in _read(db_path, _USAGE):
        if used:
            out.setdefault(rp, {})[rc] = int(used)
    return out


def capacities(db_path: str) -> dict[str, rs.Resources]:
    """Every provider's capacity, ``int((total - reserved) * allocation_ratio)``."""
    out: dict[str, rs.Resources] = {}
    for rp, rc, total, reserved, ratio in _read(db_path, _CAPACITY):
        out.setdefault(rp, {})[rc] = int((total - reserved) * ratio)
    return out
