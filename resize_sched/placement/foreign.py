"""Which part of one of our consumers is ours, and which another service's.

Our consumers are shared: Neutron puts a QoS port's bandwidth on the
server's own consumer (``NET_BW_EGR_KILOBIT_PER_SEC`` on the OVS agent's
bridge, a child of our root), Cyborg an accelerator on its device provider.
What our flavor accounts for is ours: every class the flavors involved ask
for (a server's flavor; a resize's old and new flavors), on whichever
provider holds it (our root, our child, another service's device child, a
sharing pool). Every other class is another service's (**foreign**): we
never count it, never change it and never move it; every write we make
carries it through as it is. Only a delete gives back the whole consumer.

The rule is by class alone, so telling the two parts apart never costs a
request: a class both a flavor of ours and another service put on the same
consumer is counted as ours (see ``doc/design.rst``, "Allocations that are
not ours").
"""

from collections.abc import Iterable, Mapping

from resize_sched import resources as rs
from resize_sched.resources import Allocations


def classes(*amounts: Mapping[str, int] | None) -> frozenset[str]:
    """The classes ours: every class any of ``amounts`` (flavors' totals) asks."""
    return frozenset(rc for each in amounts if each for rc, n in each.items() if n)


def split(
    allocations: Mapping[str, Mapping[str, int]], ours: Iterable[str]
) -> tuple[Allocations, Allocations]:
    """``allocations`` as (ours, foreign): the classes in ``ours``, the rest."""
    ours = frozenset(ours)
    mine = {rp: {rc: n for rc, n in res.items() if rc in ours} for rp, res in allocations.items()}
    theirs = {
        rp: {rc: n for rc, n in res.items() if rc not in ours} for rp, res in allocations.items()
    }
    return rs.normalize_allocations(mine), rs.normalize_allocations(theirs)


def merge(
    ours: Mapping[str, Mapping[str, int]], foreign: Mapping[str, Mapping[str, int]]
) -> Allocations:
    """A consumer's whole allocations: ours and the foreign part carried through."""
    if not foreign:
        return rs.normalize_allocations(ours)
    return rs.add_allocations(ours, foreign)
