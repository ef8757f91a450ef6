"""Which hosts the scheduler may choose, as Placement records it.

A host is this deployment's when the root of its provider tree has the
deployment's owner trait (``CUSTOM_RESIZE_SCHED_<[placement] deployment_name>``,
put there by its compute service), and it takes new work unless that root also
has ``COMPUTE_STATUS_DISABLED``, the standard trait Nova sets on the compute
nodes of a disabled service. Both live in Placement, so the scheduler's
queries leave other services' providers, other deployments' hosts and
disabled hosts out themselves, at no extra request.

:func:`set_disabled` is what ``resize-sched-manage host disable`` and
``host enable`` run. Disabling stops new builds and resizes from landing on
the host (as a destination, or as its own source); servers there keep
running, and resizes in flight finish, confirm and revert as usual.
"""

from collections.abc import Callable, Iterable
from typing import TypeVar

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient

LOG = logging.getLogger(__name__)

T = TypeVar("T")


def unless_unknown(
    client: PlacementClient, owner_trait: str, query: Callable[[], T], none: T
) -> T:
    """Run a query that names ``owner_trait``; ``none`` when Placement does not know the trait.

    Placement answers 400 to a query naming a trait it does not know, and our
    owner trait exists only once a compute service of this deployment has
    registered: until then this deployment has no host, which is ``none``.
    Only a failed query costs the extra request that tells the two apart.

    :raises PlacementBadRequest: the query was refused for another reason.
    """
    try:
        return query()
    except exception.PlacementBadRequest:
        if client.trait_exists(owner_trait):
            raise
        LOG.debug("No provider has ever had %s: this deployment has no host yet", owner_trait)
        return none


def list_owned(
    client: PlacementClient, owner_trait: str, *, required: Iterable[str] = (), **filters: object
) -> list[dict]:
    """This deployment's providers matching ``filters`` (see ``list_resource_providers``).

    :param owner_trait: this deployment's owner trait.
    :param required: more traits (``!TRAIT`` forbids) the providers must have.
    """
    traits = [owner_trait, *required]
    return unless_unknown(
        client,
        owner_trait,
        lambda: client.list_resource_providers(required=traits, **filters),  # type: ignore[arg-type]
        [],
    )


def find_host(client: PlacementClient, owner_trait: str, host: str) -> dict:
    """The provider of one of our hosts, by name.

    :param owner_trait: this deployment's owner trait.
    :param host: the host's name (its compute service's ``[DEFAULT] host``).
    :returns: the provider (``uuid``, ``name``, ``generation``, ...).
    :raises NotFound: no provider of that name carries ``owner_trait``.
    """
    found = list_owned(client, owner_trait, name=host)
    if not found:
        raise exception.NotFound(what=f"host {host} with the owner trait {owner_trait}")
    return found[0]


def set_disabled(client: PlacementClient, owner_trait: str, host: str, disabled: bool) -> bool:
    """Set or clear ``COMPUTE_STATUS_DISABLED`` on one of our hosts.

    The provider's other traits (its owner trait first of all) are kept; the
    write is checked against the provider generation read just before it and
    re-read on a conflict.

    :param owner_trait: this deployment's owner trait.
    :param host: the host's name.
    :param disabled: True to disable, False to enable.
    :returns: whether anything changed (False: it already was so).
    :raises NotFound: no host of ours has that name.
    :raises PlacementError: Placement refused or could not be reached.
    """
    rp = find_host(client, owner_trait, host)["uuid"]
    if disabled:
        changed = client.update_traits(rp, add=[DISABLED_TRAIT])
    else:
        changed = client.update_traits(rp, remove=[DISABLED_TRAIT])
    if changed:
        LOG.info("Host %s (%s) %s", host, rp, "disabled" if disabled else "enabled")
    return changed
