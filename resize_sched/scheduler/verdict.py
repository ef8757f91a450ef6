"""The scheduler's verdict when nothing could be claimed, and the fit rules.

A request that found no host is either ``deferred`` (some allowed host could
hold it once room is freed) or ``infeasible`` (no allowed host could hold it
even empty). :class:`VerdictMixin` decides which for
:class:`~resize_sched.scheduler.manager.Scheduler`, usually from the compute
nodes our services reported (no Placement request), asking Placement only
for what it alone knows (traits, aggregates, a class the root lacks).
:func:`deferred` and :func:`infeasible` make the error of each verdict; the
other module functions are Placement's capacity rules as the scheduler
applies them to a provider's inventory.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from oslo_log import log as logging

from resize_sched import exception, words
from resize_sched import resources as rs
from resize_sched.db import host_api
from resize_sched.placement.client import SHARING_TRAIT
from resize_sched.resources import Resources
from resize_sched.scheduler import hosts

if TYPE_CHECKING:
    from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


class VerdictMixin:
    """Deferred or infeasible, for the :class:`Scheduler` it is mixed into.

    Uses the scheduler's ``client``, ``db``, ``owner_trait``, ``_enabled``
    and ``_names``.
    """

    client: Any
    db: Any
    owner_trait: str
    _enabled: tuple[str, ...]
    _names: dict[str, str]

    def no_valid_host(self, request: SchedulingRequest, found: int = 0) -> exception.NoValidHost:
        """The error for a request nothing could be claimed for: ``infeasible``
        when no allowed host could hold it even empty (inventory constraints
        such as ``max_unit`` included), else ``deferred``."""
        return self._no_valid_host(request, found)

    def _no_valid_host(
        self,
        request: SchedulingRequest,
        found: int,
        removed: Sequence[tuple[str, int]] = (),
    ) -> exception.NoValidHost:
        """Tell "no room now" from "could never fit"; with the hosts each
        filter removed (``removed``: filter name, count), as Nova logs them."""
        wanted = rs.format_resources(request.destination_request)
        filtered = words.filtered_out(removed)
        if self._could_ever_fit(request):
            return deferred(
                f"no host has {wanted} free now ({found} candidate(s) before "
                f"filtering{filtered}); retry when room is freed"
            )
        return infeasible(
            f"no allowed host could hold {wanted}"
            + (
                f" with traits {sorted(request.required_traits)}"
                if request.required_traits
                else ""
            )
            + " even when empty"
            + (f" ({found} candidate(s) before filtering{filtered})" if removed else "")
            + (_PCPU_HINT if rs.PCPU in request.destination_request else ""),
        )

    def _could_ever_fit(self, request: SchedulingRequest) -> bool:
        """Whether any allowed host, empty, could hold the request.

        Allowed hosts are those the candidates query could return (ours,
        enabled, with the required traits, in the aggregates asked for) and
        that the request's host filters keep.

        Usually no Placement request is needed: the verdict is judged on the
        hosts the compute services reported, as Nova's host manager judges
        hosts from its ``compute_nodes`` and ``services`` tables. Each
        reported node is a host; the service row's flag says whether it is
        disabled, and the inventory its service last reported says whether
        it could hold the request empty. A provider registered in Placement
        but not yet reported by its service is no host here (the service
        reports when it starts), so in that short window a resize may be
        labelled ``infeasible`` where ``deferred`` was right. Only the label
        differs: the resize fails either way, since the candidates query
        found no room. A host disabled only through Placement's
        ``COMPUTE_STATUS_DISABLED`` trait (a hand edit: ``os-services`` and
        ``resize-sched-manage host disable`` set the trait and the service
        row together) still counts here: the row is what is read, and a
        report copies the trait into the row only when it first records the
        node (see :mod:`resize_sched.conductor.reports`).

        Placement is asked instead when there is no database, when the
        request names required traits or aggregates (they live in Placement
        alone), or when no compute node has been reported at all (services
        that never report): one listing of the allowed providers, each judged
        on its reported inventory, or on the one read from Placement (one
        request each, read last) when it has no report.
        """
        wanted = rs.normalize(request.destination_request)
        nodes = None
        if self.db is not None and not _asks_placement_only(request):
            nodes = host_api.reported_compute_nodes(self.db)
            if nodes:
                return self._could_ever_fit_reported(request, wanted, nodes)
        providers = hosts.list_owned(
            self.client,
            self.owner_trait,
            required=[
                *self._enabled,
                *sorted(request.required_traits),
                *(f"!{t}" for t in sorted(request.forbidden_traits)),
            ],
            member_of=request.member_of,
        )
        allowed = []
        for rp in providers:
            self._names[rp["uuid"]] = rp["name"]
            if _host_allowed(request, rp["uuid"], rp["name"]):
                allowed.append(rp["uuid"])
        if not allowed:
            return False
        reported: dict[str, tuple[str, dict[str, Any]]] = {}
        if self.db is not None and nodes is None:
            # NOTE: every node at once: one query whatever the cloud's size,
            # and the table holds this deployment's hosts only (when it was
            # read above, it was empty).
            reported = host_api.compute_node_inventories(self.db)
        unreported = []
        for rp in allowed:
            if rp not in reported:
                unreported.append(rp)
            elif self._tree_fits_empty(rp, reported[rp][1], wanted, request):
                return True
        for rp in unreported:
            LOG.debug("Provider %s has no compute node report; reading its inventory", rp)
            try:
                inventories, _ = self.client.get_inventories(rp)
            except exception.PlacementNotFound:
                continue  # deleted since the listing
            if self._tree_fits_empty(rp, inventories, wanted, request):
                return True
        return False

    def _could_ever_fit_reported(
        self,
        request: SchedulingRequest,
        wanted: Resources,
        nodes: list[host_api.ReportedNode],
    ) -> bool:
        """:meth:`_could_ever_fit` judged on the reported compute ``nodes`` alone."""
        for node in nodes:
            self._names[node.uuid] = node.host
        return any(
            not node.disabled
            and _host_allowed(request, node.uuid, node.host)
            and self._tree_fits_empty(node.uuid, node.inventory, wanted, request)
            for node in nodes
        )

    def _tree_fits_empty(
        self,
        root: str,
        inventory: dict[str, dict],
        wanted: Resources,
        request: SchedulingRequest | None = None,
    ) -> bool:
        """Whether the host of root provider ``root`` (its own ``inventory``)
        could hold ``wanted`` empty.

        A class the root has is judged on the root alone, as on a flat host,
        at no cost. A class it lacks may be on a child (a vGPU, a NUMA node)
        or on a sharing provider (a disk pool), which the compute node's
        report does not show: Placement is asked (failure path only), the
        providers of the host's tree and the sharing providers, each judged
        empty. A request with numbered groups is judged on them all, group by
        group (:func:`_groups_fit_empty`). Erring towards ``deferred`` is
        safe: it only means a retry.
        """
        if request is not None and request.groups:
            others = self._others_of(root)
            if others is None:
                return False
            unnumbered = dict(wanted)
            for group in request.groups:
                unnumbered = rs.normalize(
                    {rc: n - group.resources.get(rc, 0) for rc, n in unnumbered.items()}
                )
            return _groups_fit_empty(
                {root: inventory, **others},
                request.groups,
                unnumbered,
                isolate=request.group_policy == "isolate",
            )
        on_root = {rc: n for rc, n in wanted.items() if rc in inventory}
        if not _fits_empty(inventory, on_root):
            return False
        elsewhere = {rc: n for rc, n in wanted.items() if rc not in inventory}
        if not elsewhere:
            return True
        others = self._others_of(root)
        if others is None:
            return False
        return all(
            any(_fits_empty(inv, {rc: amount}) for inv in others.values())
            for rc, amount in elsewhere.items()
        )

    def _others_of(self, root: str) -> dict[str, dict[str, dict]] | None:
        """The inventories of the providers of ``root``'s tree but the root,
        and of the sharing providers; None when the host went away."""
        try:
            others = [
                rp["uuid"]
                for rp in self.client.list_resource_providers(in_tree=root)
                if rp["uuid"] != root
            ]
            others += [
                rp["uuid"] for rp in self.client.list_resource_providers(required=[SHARING_TRAIT])
            ]
            return {rp: self.client.get_inventories(rp)[0] for rp in others}
        except exception.PlacementNotFound:
            return None  # the host went away meanwhile


#: Why an infeasible request for dedicated CPUs fails, the usual cause said.
_PCPU_HINT = (
    "; PCPU (dedicated CPUs, hw:cpu_policy=dedicated or mixed) is offered only by "
    "hosts with [compute] cpu_dedicated_set, as many as the set's CPUs"
)


def deferred(reason: str) -> exception.NoValidHost:
    """The NoValidHost of a request some allowed host could take once room is
    freed (a retry may succeed); a build whose every claim was refused says
    so with it too."""
    return exception.NoValidHost(kind=exception.NoValidHost.DEFERRED, reason=reason)


def infeasible(reason: str) -> exception.NoValidHost:
    """The NoValidHost of a request no allowed host could hold even empty."""
    return exception.NoValidHost(kind=exception.NoValidHost.INFEASIBLE, reason=reason)


#: Numbered groups are placed by trying every assignment only up to this
#: many of them; past it a host is taken to fit (towards ``deferred``).
_MAX_PLACED_GROUPS = 6


def _groups_fit_empty(
    inventories: dict[str, dict[str, dict]],
    groups: Sequence[rs.RequestGroup],
    unnumbered: Resources,
    *,
    isolate: bool,
) -> bool:
    """Whether empty providers with ``inventories`` (one host's tree and the
    sharing providers) could hold a request, as Placement would place it:
    each numbered group whole on one provider (each on its own under
    ``isolate``), each class of the unnumbered group on one provider, the
    amounts a provider gets from several groups summed. Group traits are
    not judged (towards ``deferred``).
    """
    if len(groups) > _MAX_PLACED_GROUPS:
        return True
    providers = list(inventories)
    for choice in itertools.product(providers, repeat=len(groups)):
        if isolate and len(set(choice)) != len(choice):
            continue
        placed = rs.add_allocations(*(rs.on(rp, g.resources) for rp, g in zip(choice, groups)))
        if not all(_fits_empty(inventories[rp], amounts) for rp, amounts in placed.items()):
            continue
        if all(
            any(
                _fits_empty(inventories[rp], rs.add(placed.get(rp, {}), {rc: amount}))
                for rp in providers
            )
            for rc, amount in unnumbered.items()
        ):
            return True
    return False


def _asks_placement_only(request: SchedulingRequest) -> bool:
    """Whether the request asks for what Placement alone knows: traits
    (required or forbidden) or aggregates, of any group."""
    return bool(
        request.required_traits
        or request.forbidden_traits
        or request.member_of
        or any(g.required_traits or g.forbidden_traits or g.member_of for g in request.groups)
    )


def _host_allowed(request: SchedulingRequest, provider: str, name: str) -> bool:
    """Whether the request's host filters let ``provider`` (host ``name``) be chosen."""
    return not (
        (provider == request.source and not request.allow_same_host)
        or name in request.ignore_hosts
        or (request.force_hosts and name not in request.force_hosts)
    )


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
