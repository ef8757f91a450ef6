"""The strategy's view of a resize, read from its migration row.

:func:`facts_of` builds the :class:`~resize_sched.strategies.ResizeFacts` a
step hands its strategy, with the map of which provider held which request
group when the resize began (recorded, or read from the holdings when only
one reading fits: see :mod:`resize_sched.resources.group_map`).
"""

from typing import Any

from resize_sched import resources as rs
from resize_sched.resources import group_map as gm
from resize_sched.strategies import ResizeFacts


def facts_of(migration: Any, claimed_groups: Any = None) -> ResizeFacts:
    """The strategy's view of a migration row.

    :param claimed_groups: the server's ``group_providers`` once the claim is
        recorded (the confirm reads it); None before.
    """
    # NOTE: stored snapshots: read as they were claimed even when today's
    # hw:numa_nodes checks refuse them (a resize in flight must finish).
    old = rs.stored_request(migration.old_flavor)
    new = rs.stored_request(migration.new_flavor)
    original = getattr(migration, "old_allocations", None) or {}
    group_providers = gm.normalize(getattr(migration, "old_group_providers", None))
    if group_providers is None and old.groups:
        # NOTE: a server recorded before the map was (or adopted without
        # one): its holdings say where each group is when only one reading
        # fits; otherwise the map stays unknown and the increase goes to the
        # first provider holding each class, as before.
        held = original or rs.on(migration.source_rp_uuid, migration.old_resources)
        group_providers = gm.derive(held, old.groups, old.group_policy)
    return ResizeFacts(
        source=migration.source_rp_uuid,
        old=migration.old_resources,
        new=migration.new_resources,
        original=original,
        old_groups=old.groups,
        new_groups=new.groups,
        group_policy=new.group_policy,
        group_providers=group_providers,
        claimed_groups=gm.normalize(claimed_groups),
    )


def grouped(facts: ResizeFacts) -> bool:
    """Whether either flavor has numbered groups: only then is a map recorded
    (a flat resize writes the same rows as ever)."""
    return bool(facts.old_groups or facts.new_groups)


def group_devices(facts: ResizeFacts) -> frozenset[str]:
    """The providers the server's numbered groups hold (a device each) when
    the new flavor isolates its groups: a new group must go elsewhere."""
    if facts.group_policy != "isolate" or not facts.old_groups:
        return frozenset()
    if facts.group_providers:
        return frozenset(
            rp for group in facts.old_groups for rp in facts.group_providers.get(group.suffix, ())
        )
    classes = {rc for group in facts.old_groups for rc in group.resources}
    return frozenset(
        rp for rp, res in facts.original.items() if rp != facts.source and classes & set(res)
    )
