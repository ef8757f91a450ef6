"""Placement's resource-provider calls: providers, inventories, aggregates, traits, usages.

:class:`ProviderCalls` is the part of
:class:`~resize_sched.placement.client.PlacementClient` that reads and
writes resource providers (what the compute services register, what the
scheduler's verdict and the audit tools read); allocations and allocation
candidates are the client's own. Each call is one request (a read-modify-write
one read and one write), at the floor microversion unless it needs more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.placement.microversions import (
    ERROR_CODE_VERSION,
    INVENTORY_VERSION,
    PROVIDER_ALLOCATIONS_VERSION,
)
from resize_sched.resources import Resources, format_resources, normalize

LOG = logging.getLogger(__name__)

#: Times :meth:`PlacementClient.update_traits` re-reads a provider's traits
#: after a provider generation conflict.
TRAIT_CONFLICT_RETRIES = 5


class ProviderCalls:
    """Resource-provider calls of the client it is mixed into, which makes
    each request (``_request``) at a pinned microversion (``_pin``)."""

    _request: Callable[..., Any]

    def _pin(self, version: tuple[int, int] = ERROR_CODE_VERSION) -> tuple[int, int]:
        raise NotImplementedError

    def create_resource_provider(
        self, name: str, uuid: str | None = None, parent_provider_uuid: str | None = None
    ) -> dict:
        """Create a resource provider.

        :param name: unique provider name.
        :param uuid: the provider's uuid; Placement picks one when None.
        :param parent_provider_uuid: the parent, for a nested provider.
        :returns: the provider (``uuid``, ``name``, ``generation``, ...).
        :raises PlacementConflict: the name or uuid is taken.
        """
        body: dict[str, Any] = {"name": name}
        if uuid:
            body["uuid"] = uuid
        if parent_provider_uuid:
            body["parent_provider_uuid"] = parent_provider_uuid
        return self._request("POST", "/resource_providers", self._pin(), json=body).json()

    def get_resource_provider(self, uuid: str) -> dict:
        """Read one provider.

        :raises PlacementNotFound: there is no such provider.
        """
        return self._request("GET", f"/resource_providers/{uuid}", self._pin()).json()

    def list_resource_providers(
        self,
        *,
        name: str | None = None,
        in_tree: str | None = None,
        required: Iterable[str] = (),
        member_of: Iterable[str] = (),
        resources: Mapping[str, int] | None = None,
    ) -> list[dict]:
        """List providers matching every filter given.

        :param name: exact provider name.
        :param in_tree: a provider uuid; only providers of its tree qualify.
        :param required: traits every provider must have (``!TRAIT`` forbids).
        :param member_of: each item one ``member_of`` value (an aggregate uuid or
            ``in:agg1,agg2``); all of them must hold.
        :param resources: class -> amount each provider must have free now,
            all of them on the provider itself (1.4, below the pinned floor).
        :returns: the providers.
        """
        params = filter_params(name=name, in_tree=in_tree, required=required, member_of=member_of)
        if resources:
            params.append(("resources", format_resources(resources)))
        resp = self._request("GET", "/resource_providers", self._pin(), params=params)
        return resp.json()["resource_providers"]

    def delete_resource_provider(self, uuid: str) -> None:
        """Delete a provider.

        :raises PlacementNotFound: there is no such provider.
        :raises PlacementConflict: it still has allocations or children.
        """
        self._request("DELETE", f"/resource_providers/{uuid}", self._pin())

    def set_inventory(
        self,
        rp_uuid: str,
        inventories: Mapping[str, int | Mapping[str, Any]],
        generation: int | None = None,
    ) -> int:
        """Replace a provider's whole inventory (custom classes are created).

        :param inventories: class -> total, or class -> full inventory record
            (``total``, ``reserved``, ``allocation_ratio``, ``min_unit``,
            ``max_unit``, ``step_size``).
        :param generation: the provider generation; None reads it first.
        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed meanwhile.
        :raises PlacementConflict: removing inventory that is in use.
        """
        records = {
            rc: ({"total": int(v)} if isinstance(v, int) else dict(v))
            for rc, v in inventories.items()
        }
        for rc in records:
            if rc.startswith("CUSTOM_"):
                self._request("PUT", f"/resource_classes/{rc}", self._pin())
        if generation is None:
            generation = self.get_inventories(rp_uuid)[1]
        body = {"resource_provider_generation": generation, "inventories": records}
        path = f"/resource_providers/{rp_uuid}/inventories"
        resp = self._request("PUT", path, self._pin(INVENTORY_VERSION), json=body)
        return resp.json()["resource_provider_generation"]

    def get_inventories(self, rp_uuid: str) -> tuple[dict[str, dict], int]:
        """Read a provider's inventory.

        :returns: (class -> inventory record, provider generation).
        :raises PlacementNotFound: there is no such provider.
        """
        path = f"/resource_providers/{rp_uuid}/inventories"
        body = self._request("GET", path, self._pin()).json()
        return body["inventories"], body["resource_provider_generation"]

    def get_aggregates(self, rp_uuid: str) -> tuple[frozenset[str], int]:
        """Read a provider's aggregates.

        :returns: (aggregate uuids, provider generation).
        :raises PlacementNotFound: there is no such provider.
        """
        return self._read_set(rp_uuid, "aggregates")

    def set_aggregates(self, rp_uuid: str, aggregates: Iterable[str], generation: int) -> int:
        """Replace a provider's aggregates, checked against ``generation``.

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed since ``generation``.
        """
        return self._write_set(rp_uuid, "aggregates", sorted(set(aggregates)), generation)

    def update_aggregates(
        self,
        rp_uuid: str,
        *,
        add: Iterable[str] = (),
        remove: Iterable[str] = (),
        conflict_retries: int = TRAIT_CONFLICT_RETRIES,
    ) -> bool:
        """Add and remove some of a provider's aggregates, keeping the others
        (another service's, a shared disk pool's).

        Read, then written with the generation read; a generation conflict
        (the provider changed meanwhile) is re-read and retried.

        :returns: whether they were written (False: they already were so).
        :raises ConsumerGenerationConflict: still conflicting after
            ``conflict_retries`` re-reads.
        :raises PlacementNotFound: there is no such provider.
        """
        return _update_set(
            rp_uuid,
            "aggregates",
            self.get_aggregates,
            self.set_aggregates,
            add,
            remove,
            conflict_retries,
        )

    def trait_exists(self, name: str) -> bool:
        """Whether Placement knows the trait ``name`` (a query naming an unknown one is a 400)."""
        try:
            self._request("GET", f"/traits/{name}", self._pin())
        except exception.PlacementNotFound:
            return False
        return True

    def get_traits(self, rp_uuid: str) -> tuple[frozenset[str], int]:
        """Read a provider's traits.

        :returns: (its traits, provider generation).
        :raises PlacementNotFound: there is no such provider.
        """
        return self._read_set(rp_uuid, "traits")

    def put_traits(self, rp_uuid: str, traits: Iterable[str], generation: int) -> int:
        """Replace a provider's traits, checked against ``generation``.

        ``CUSTOM_*`` traits are created first (one request each).

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed since ``generation``.
        :raises PlacementBadRequest: an unknown standard trait.
        :raises PlacementNotFound: there is no such provider.
        """
        traits = self._create_custom_traits(traits)
        return self._write_set(rp_uuid, "traits", traits, generation)

    def update_traits(
        self,
        rp_uuid: str,
        *,
        add: Iterable[str] = (),
        remove: Iterable[str] = (),
        conflict_retries: int = TRAIT_CONFLICT_RETRIES,
    ) -> bool:
        """Add and remove some of a provider's traits, keeping the others.

        Read, then written with the generation read. Unlike allocation writes,
        a generation conflict is retried here: what to re-read (the traits)
        is all this call needs.

        :returns: whether they were written (False: they already were so).
        :raises ConsumerGenerationConflict: still conflicting after
            ``conflict_retries`` re-reads.
        :raises PlacementNotFound: there is no such provider.
        """
        return _update_set(
            rp_uuid, "traits", self.get_traits, self.put_traits, add, remove, conflict_retries
        )

    def set_traits(self, rp_uuid: str, traits: Iterable[str]) -> int:
        """Replace a provider's traits, creating ``CUSTOM_*`` traits as needed.

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed meanwhile.
        :raises PlacementBadRequest: an unknown standard trait.
        """
        traits = self._create_custom_traits(traits)
        path = f"/resource_providers/{rp_uuid}/traits"
        generation = self._request("GET", path, self._pin()).json()["resource_provider_generation"]
        return self._write_set(rp_uuid, "traits", traits, generation)

    def _create_custom_traits(self, traits: Iterable[str]) -> list[str]:
        """``traits`` sorted, each ``CUSTOM_*`` one created first (one
        ``PUT /traits/{name}`` each, a no-op for one that exists)."""
        traits = sorted(set(traits))
        for name in traits:
            if name.startswith("CUSTOM_"):
                self._request("PUT", f"/traits/{name}", self._pin())
        return traits

    def _read_set(self, rp_uuid: str, what: str) -> tuple[frozenset[str], int]:
        """A provider's ``what`` (``traits``, ``aggregates``) and its generation."""
        path = f"/resource_providers/{rp_uuid}/{what}"
        body = self._request("GET", path, self._pin()).json()
        return frozenset(body[what]), body["resource_provider_generation"]

    def _write_set(self, rp_uuid: str, what: str, members: list[str], generation: int) -> int:
        """``PUT`` a provider's whole ``what`` (``traits``, ``aggregates``) at
        ``generation``; its new generation."""
        body = {what: members, "resource_provider_generation": generation}
        path = f"/resource_providers/{rp_uuid}/{what}"
        resp = self._request("PUT", path, self._pin(), json=body)
        return resp.json()["resource_provider_generation"]

    def get_usages(self, rp_uuid: str) -> Resources:
        """What all consumers hold on a provider, per class (zeros dropped).

        :raises PlacementNotFound: there is no such provider.
        """
        path = f"/resource_providers/{rp_uuid}/usages"
        return normalize(self._request("GET", path, self._pin()).json()["usages"])

    def get_provider_allocations(self, rp_uuid: str) -> dict[str, Resources]:
        """What each consumer holds on one provider (audit tools).

        :param rp_uuid: the provider.
        :returns: consumer uuid -> its resources there (zeros dropped,
            consumers left with nothing omitted).
        :raises PlacementNotFound: there is no such provider.
        """
        path = f"/resource_providers/{rp_uuid}/allocations"
        body = self._request("GET", path, self._pin(PROVIDER_ALLOCATIONS_VERSION)).json()
        held = {
            consumer: normalize(alloc.get("resources", {}))
            for consumer, alloc in body.get("allocations", {}).items()
        }
        return {consumer: res for consumer, res in held.items() if res}


def _update_set(
    rp_uuid: str,
    what: str,
    read: Callable[[str], tuple[frozenset[str], int]],
    write: Callable[[str, Iterable[str], int], int],
    add: Iterable[str],
    remove: Iterable[str],
    conflict_retries: int,
) -> bool:
    """Add and remove members of one of a provider's sets (its ``what``:
    traits, aggregates), keeping the others: ``read``, then ``write`` at
    the generation read, re-read and retried on a generation conflict.

    :returns: whether it was written (False: it already was so).
    :raises ConsumerGenerationConflict: still conflicting after
        ``conflict_retries`` re-reads.
    """
    add, remove = frozenset(add), frozenset(remove)
    for attempt in range(conflict_retries + 1):
        current, generation = read(rp_uuid)
        wanted = (current | add) - remove
        if wanted == current:
            return False
        try:
            write(rp_uuid, wanted, generation)
            return True
        except exception.ConsumerGenerationConflict:
            if attempt == conflict_retries:
                raise
            LOG.debug("Provider %s changed meanwhile; re-reading its %s", rp_uuid, what)
    raise AssertionError("unreachable")  # pragma: no cover


def filter_params(
    *,
    name: str | None = None,
    in_tree: str | None = None,
    required: Iterable[str] = (),
    member_of: Iterable[str] = (),
) -> list[tuple[str, str]]:
    params: list[tuple[str, str]] = []
    if name is not None:
        params.append(("name", name))
    if in_tree is not None:
        params.append(("in_tree", in_tree))
    traits = ",".join(required)
    if traits:
        params.append(("required", traits))
    params.extend(("member_of", m) for m in member_of)
    return params
