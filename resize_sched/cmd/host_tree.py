"""What ``resize-sched-manage host show HOST`` prints: a host's provider tree.

Placement is the source: the root and every provider of its tree
(``in_tree=<root>``), each with its inventory, usages and traits, and its
owner told by its traits (our owner trait on the root, our child trait on
the children our compute service keeps; anything else is another service's).
The compute node our database holds adds what the host's service last
reported of its children, so a child of ours that the report lacks (or a
reported one Placement no longer has) shows: ``os-hypervisors`` counts the
reported ones.
"""

from collections.abc import Iterator, Mapping
from typing import Any

from resize_sched import exception
from resize_sched.db import models
from resize_sched.placement.client import PlacementClient, child_trait

#: An inventory record's defaults: a field at its default is not printed.
_DEFAULT_RESERVED = 0
_DEFAULT_RATIO = 1.0


def _inventory(records: Mapping[str, Mapping[str, Any]], usages: Mapping[str, int]) -> str:
    """``VCPU 2/8 used (ratio 16.0), MEMORY_MB 0/4096 used (512 reserved)``."""
    if not records:
        return "none"
    items = []
    for rc, record in sorted(records.items()):
        notes = []
        reserved = int(record.get("reserved", _DEFAULT_RESERVED))
        if reserved != _DEFAULT_RESERVED:
            notes.append(f"{reserved} reserved")
        ratio = float(record.get("allocation_ratio", _DEFAULT_RATIO))
        if abs(ratio - _DEFAULT_RATIO) > 1e-6:
            notes.append(f"ratio {ratio:g}")
        extra = f" ({', '.join(notes)})" if notes else ""
        items.append(f"{rc} {usages.get(rc, 0)}/{record['total']} used{extra}")
    return ", ".join(items)


def _owner(provider: Mapping[str, Any], traits: frozenset[str], owner: str, root: str) -> str:
    if provider["uuid"] == root:
        return "ours" if owner in traits else "another service's"
    return "ours" if child_trait(owner) in traits else "another service's"


def describe(
    client: PlacementClient,
    owner: str,
    root: Mapping[str, Any],
    node: models.ComputeNode | None,
) -> Iterator[str]:
    """The lines printed for one host.

    :param owner: this deployment's owner trait.
    :param root: the host's root provider (one of ours).
    :param node: its compute node as recorded, or None (never reported).
    :raises PlacementError: Placement could not be read.
    """
    reported: dict[str, Any] = dict((node.children or {}) if node is not None else {})
    providers = client.list_resource_providers(in_tree=root["uuid"])
    by_parent: dict[str | None, list[Mapping[str, Any]]] = {}
    for provider in providers:
        parent = None if provider["uuid"] == root["uuid"] else provider["parent_provider_uuid"]
        by_parent.setdefault(parent, []).append(provider)
    if node is None:
        yield f"Host {root['name']}: no report from its compute service recorded yet"
    else:
        when = node.reported_at.isoformat(timespec="seconds") if node.reported_at else "never"
        yield (
            f"Host {root['name']}: last reported {when}, "
            f"{len(reported)} child provider(s) of its own"
        )

    def walk(parent: str | None, depth: int) -> Iterator[str]:
        for provider in sorted(by_parent.get(parent, []), key=lambda p: p["name"]):
            uuid = provider["uuid"]
            try:
                records, _ = client.get_inventories(uuid)
                usages = client.get_usages(uuid)
                traits, _ = client.get_traits(uuid)
            except exception.PlacementNotFound:
                continue  # deleted while we read the tree
            kind = "root" if uuid == root["uuid"] else "child"
            whose = _owner(provider, traits, owner, root["uuid"])
            note = ""
            if kind == "child" and whose == "ours" and node is not None:
                note = "" if reported.pop(uuid, None) is not None else ", not in its last report"
            pad = "  " * depth
            yield f"{pad}{kind} {provider['name']} ({uuid}): {whose}{note}"
            yield f"{pad}  inventory: {_inventory(records, usages)}"
            yield f"{pad}  traits: {', '.join(sorted(traits)) or 'none'}"
            yield from walk(uuid, depth + 1)

    yield from walk(None, 1)
    for uuid, child in sorted(reported.items()):
        if not any(p["uuid"] == uuid for p in providers):
            yield f"  reported child {child.get('name')} ({uuid}): not in Placement"
        else:
            yield f"  reported child {child.get('name')} ({uuid}): no longer ours in Placement"
