"""Host aggregates mirrored into Placement, as Nova does.

Each aggregate's ``uuid`` is a Placement aggregate; the root provider of
each of its hosts (the compute node's provider) is a member of it, so that a
zone or a tenant's hosts can be asked of Placement as ``member_of`` in the
allocation-candidates query itself (:mod:`resize_sched.conductor.tasks.policy`).

Only the uuids of our own aggregates are ever added or removed: every other
aggregate a provider is in (another service's, a shared disk pool's) is
kept, through :meth:`~resize_sched.placement.client.PlacementClient.update_aggregates`
(generation-checked, re-read on a conflict).

:func:`sync` is ``resize-sched-manage placement sync_aggregates``: it puts
right what drifted (a host added while its provider did not exist yet, a
provider re-created, an aggregate changed by hand in Placement) and says
what it changed.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient

LOG = logging.getLogger(__name__)


def host_roots(db: Database, host: str) -> list[str]:
    """The root providers of ``host`` (its compute nodes'; none before its
    first report)."""
    return [node.uuid for node in db.compute_nodes_by_host(host)]


def add_host(db: Database, client: PlacementClient, host: str, aggregate_uuid: str) -> list[str]:
    """Make ``host``'s root providers members of ``aggregate_uuid``.

    :returns: the providers written (none: no provider yet, or already members).
    :raises PlacementError: Placement could not be read or written.
    """
    return [
        rp for rp in host_roots(db, host) if client.update_aggregates(rp, add=[aggregate_uuid])
    ]


def remove_host(
    db: Database, client: PlacementClient, host: str, aggregate_uuid: str
) -> list[str]:
    """Take ``host``'s root providers out of ``aggregate_uuid`` (their other
    aggregates are kept).

    :returns: the providers written.
    :raises PlacementError: Placement could not be read or written.
    """
    written = []
    for rp in host_roots(db, host):
        try:
            if client.update_aggregates(rp, remove=[aggregate_uuid]):
                written.append(rp)
        except exception.PlacementNotFound:
            LOG.info(
                "Provider %s of %s is gone: nothing to take out of %s", rp, host, aggregate_uuid
            )
    return written


@dataclass
class SyncReport:
    """What :func:`sync` changed: ``(provider, host, aggregate uuid)`` each."""

    added: list[tuple[str, str, str]] = field(default_factory=list)
    removed: list[tuple[str, str, str]] = field(default_factory=list)
    #: hosts in an aggregate with no provider of ours yet
    no_provider: list[str] = field(default_factory=list)
    #: providers Placement could not read or write, with the error
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def sync(db: Database, client: PlacementClient, *, dry_run: bool = False) -> SyncReport:
    """Make every compute node's root provider a member of exactly our
    aggregates its host is in, leaving every other aggregate alone.

    :param dry_run: report what would change; write nothing.
    :returns: what was (or would be) added and removed.
    """
    aggregates = db.aggregate_list()
    ours = frozenset(a.uuid for a in aggregates)
    wanted: dict[str, set[str]] = {}
    for agg in aggregates:
        for host in agg.hosts:
            wanted.setdefault(host, set()).add(agg.uuid)
    report = SyncReport()
    nodes = db.compute_node_list()
    with_nodes = {n.host for n in nodes}
    report.no_provider = sorted(set(wanted) - with_nodes)
    for node in nodes:
        want = frozenset(wanted.get(node.host, ()))
        try:
            current, _generation = client.get_aggregates(node.uuid)
            add, remove = want - current, (current & ours) - want
            if (add or remove) and not dry_run:
                client.update_aggregates(node.uuid, add=add, remove=remove)
        except exception.PlacementError as exc:
            report.failed.append((node.uuid, str(exc)))
            continue
        report.added.extend((node.uuid, node.host, a) for a in sorted(add))
        report.removed.extend((node.uuid, node.host, a) for a in sorted(remove))
    for rp, host, agg in report.added:
        LOG.info(
            "Provider %s of %s %s aggregate %s", rp, host, "needs" if dry_run else "joined", agg
        )
    for rp, host, agg in report.removed:
        LOG.info(
            "Provider %s of %s %s aggregate %s", rp, host, "leaves" if dry_run else "left", agg
        )
    return report


def describe(report: SyncReport, *, dry_run: bool = False) -> Iterable[str]:
    """The report's lines, as the command prints them."""
    verb_add, verb_remove = ("would add", "would remove") if dry_run else ("added", "removed")
    for rp, host, agg in report.added:
        yield f"{verb_add} provider {rp} (host {host}) to aggregate {agg}"
    for rp, host, agg in report.removed:
        yield f"{verb_remove} provider {rp} (host {host}) from aggregate {agg}"
    for host in report.no_provider:
        yield f"host {host} is in an aggregate but has no resource provider yet"
    for rp, error in report.failed:
        yield f"provider {rp} could not be synced: {error}"
    if not (report.changed or report.no_provider or report.failed):
        yield "every provider's aggregates match: nothing to change"
