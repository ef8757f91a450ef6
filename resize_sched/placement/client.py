"""A thin, typed client for the Placement API.

Every call is one HTTP request (the count is kept in ``request_count``), made
through a keystoneauth1 Adapter with the microversion pinned for that call:
the lowest that has what the call needs, but never below 1.23 so that errors
carry Placement's error code. Allocation reads and writes use the version
negotiated with the server: 1.38 (consumer types) when it has it, else 1.28.

Failures are never returned: they raise the typed errors of
:mod:`resize_sched.exception`. Retries on connection failures and on 5xx
answers are keystoneauth's own (``connect_retries``, ``status_code_retries``,
``retriable_status_codes`` in ``[placement]``); generation conflicts are for
the caller to retry, since only it knows what to re-read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conf import placement as placement_conf
from resize_sched.resources import (
    Allocations,
    RequestGroup,
    Resources,
    format_resources,
    normalize,
    normalize_allocations,
)

LOG = logging.getLogger(__name__)

MIN_VERSION = (1, 28)  # consumer generations: required of the server
ERROR_CODE_VERSION = (1, 23)  # errors carry a code: the floor of every call
INVENTORY_VERSION = (1, 26)  # reserved may equal total
IN_TREE_VERSION = (1, 31)  # in_tree on allocation candidates, root/parent in summaries
ROOT_REQUIRED_VERSION = (1, 35)  # root_required on allocation candidates
CONSUMER_TYPE_VERSION = (1, 38)  # consumer_type, used when the server has it
FORBIDDEN_AGGREGATES_VERSION = (1, 32)  # member_of=!in:... (not in any of these)
RESHAPER_VERSION = (1, 30)  # POST /reshaper: inventories and allocations in one request
# GET /resource_providers/{uuid}/allocations is as old as Placement (1.0) and
# its answer never changed shape; the floor of every call is error codes.
PROVIDER_ALLOCATIONS_VERSION = ERROR_CODE_VERSION

INSTANCE = "INSTANCE"
MIGRATION = "MIGRATION"

#: The owner trait of a deployment is this prefix and its upper-cased
#: ``[placement] deployment_name`` (see :func:`owner_trait`).
OWNER_TRAIT_PREFIX = "CUSTOM_RESIZE_SCHED_"
#: The standard trait on the root provider of a host that takes no new work
#: (os-traits; Nova sets it on the compute nodes of a disabled service).
DISABLED_TRAIT = "COMPUTE_STATUS_DISABLED"
#: The standard trait of a provider whose inventory the hosts of its
#: aggregates share (a storage pool's DISK_GB).
SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
#: The standard trait Nova puts on the root provider of its compute nodes.
NOVA_COMPUTE_TRAIT = "COMPUTE_NODE"

#: Times :meth:`PlacementClient.update_traits` re-reads a provider's traits
#: after a provider generation conflict.
TRAIT_CONFLICT_RETRIES = 5

CONCURRENT_UPDATE = "placement.concurrent_update"
_CAPACITY_REFUSED = "Unable to allocate inventory"


@dataclass(frozen=True)
class ConsumerAllocations:
    """What one consumer holds, as read from Placement."""

    allocations: Allocations
    generation: int | None  # None when the consumer does not exist
    project_id: str | None = None
    user_id: str | None = None
    consumer_type: str | None = None


@dataclass(frozen=True)
class ConsumerWrite:
    """The full target of one consumer in an allocation write."""

    allocations: Allocations  # {} empties (deletes) the consumer
    project_id: str
    user_id: str
    generation: int | None  # None = "I expect this consumer not to exist yet"
    consumer_type: str = INSTANCE  # sent only when the server supports 1.38


@dataclass(frozen=True)
class Candidates:
    """The answer of ``GET /allocation_candidates``."""

    allocation_requests: list[Allocations]
    provider_summaries: dict[str, dict]
    #: per allocation request (1.34+): request group suffix -> the providers
    #: that satisfy it (``""``: the unnumbered group); empty when not known.
    mappings: list[dict[str, list[str]]] = field(default_factory=list)


def _mv(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def parse_error(response: Any) -> tuple[str, str]:
    """Return Placement's (error code, detail) from an error response.

    The detail loses the generic title webob puts in front of it.
    """
    try:
        error = response.json()["errors"][0]
        code, detail = error.get("code") or "", error.get("detail") or ""
    except (ValueError, KeyError, IndexError, TypeError):
        code, detail = "", response.text or ""
    _title, sep, rest = detail.partition("\n\n")
    return code, " ".join((rest if sep else detail).split())


def error_for(method: str, url: str, status: int, code: str, detail: str) -> Exception:
    """Map one failed answer to the typed error the caller should see."""
    info = {"method": method, "url": url, "status": status, "placement_code": code}
    if status >= 500:
        return exception.PlacementUnavailable(reason=f"HTTP {status} ({code}): {detail}", **info)
    if status == 409:
        if code == CONCURRENT_UPDATE:
            return exception.ConsumerGenerationConflict(detail=detail, **info)
        if _CAPACITY_REFUSED in detail:
            return exception.ClaimRefused(detail=f"{detail} ({method} {url})", **info)
        return exception.PlacementConflict(detail=detail, **info)
    if status == 404:
        return exception.PlacementNotFound(what=f"{url} ({method}, {code})", detail=detail, **info)
    if status == 400:
        return exception.PlacementBadRequest(detail=f"{detail} ({code})", **info)
    return exception.PlacementError(
        reason=f"{method} {url} answered HTTP {status} ({code}): {detail}", **info
    )


def owner_trait(deployment_name: str) -> str:
    """The trait marking the resource providers of one deployment as its own.

    :param deployment_name: ``[placement] deployment_name`` (letters, digits, ``_``).
    :returns: ``CUSTOM_RESIZE_SCHED_<NAME>``, the name upper-cased.
    """
    return OWNER_TRAIT_PREFIX + deployment_name.upper()


#: The child trait of a deployment is this prefix and its upper-cased
#: ``[placement] deployment_name`` (see :func:`child_trait`).
CHILD_TRAIT_PREFIX = "CUSTOM_RSCHED_CHILD_"


def child_trait(owner: str) -> str:
    """The trait our compute services put on the child providers they create.

    Kept apart from the owner trait, which marks hosts (roots) only: a child
    with the owner trait would be listed, and scheduled to, as a host.

    :param owner: the deployment's owner trait (:func:`owner_trait`).
    :returns: ``CUSTOM_RSCHED_CHILD_<NAME>``.
    """
    return CHILD_TRAIT_PREFIX + owner[len(OWNER_TRAIT_PREFIX) :]


def parse_version(text: str) -> tuple[int, int]:
    """``"1.39"`` -> ``(1, 39)``."""
    major, _, minor = text.partition(".")
    return int(major), int(minor)


class PlacementClient:
    """Placement API calls with typed errors and pinned microversions.

    Thread-safe: one client may be shared by the threads of a process.

    :param adapter: a keystoneauth1 Adapter for the placement service.
    """

    def __init__(self, adapter: ks_adapter.Adapter) -> None:
        self._adapter = adapter
        self._lock = threading.Lock()
        self._max_version: tuple[int, int] | None = None
        self.request_count = 0

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> PlacementClient:
        """Build the session, auth and adapter from the ``[placement]`` group.

        :param conf: a ConfigOpts with resize_sched's options registered.
        :returns: a new client.
        """
        group = placement_conf.GROUP_NAME
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth, raise_exc=False
        )
        return cls(adapter)

    def reset_request_count(self) -> None:
        """Set :attr:`request_count` back to 0."""
        with self._lock:
            self.request_count = 0

    # -- plumbing -------------------------------------------------------------

    def _request(
        self, method: str, path: str, version: tuple[int, int] | None, **kwargs: Any
    ) -> Any:
        """Make one request; return the 2xx response or raise the mapped error."""
        with self._lock:
            self.request_count += 1
        if version is not None:
            kwargs["microversion"] = _mv(version)
        started = time.monotonic()
        try:
            resp = self._adapter.request(path, method, raise_exc=False, **kwargs)
        except (ks_exc.ConnectionError, ks_exc.EndpointNotFound, ks_exc.DiscoveryFailure) as e:
            LOG.debug("%s %s failed after %.1f ms: %s", method, path, _ms(started), e)
            raise exception.PlacementUnavailable(method=method, url=path, reason=str(e)) from e
        except ks_exc.ClientException as e:  # authentication and the like
            raise exception.PlacementError(reason=f"{method} {path}: {e}") from e
        LOG.debug("%s %s %s %.1f ms", method, resp.url, resp.status_code, _ms(started))
        if 200 <= resp.status_code < 300:
            return resp
        code, detail = parse_error(resp)
        raise error_for(method, resp.url or path, resp.status_code, code, detail)

    @property
    def max_version(self) -> tuple[int, int]:
        """The highest microversion the server supports (read once, from ``GET /``).

        :raises PlacementVersionUnsupported: the server is older than MIN_VERSION.
        """
        if self._max_version is None:
            resp = self._request("GET", "/", None)
            try:
                doc = resp.json()["versions"][0]
                version = parse_version(doc["max_version"])
            except (ValueError, KeyError, IndexError, TypeError) as e:
                raise exception.PlacementError(
                    reason=f"GET {resp.url}: unreadable version document: {e}"
                ) from e
            if version < MIN_VERSION:
                raise exception.PlacementVersionUnsupported(
                    url=resp.url, max_version=_mv(version), min_version=_mv(MIN_VERSION)
                )
            self._max_version = version
        return self._max_version

    @property
    def supports_consumer_types(self) -> bool:
        """Whether allocations carry ``consumer_type`` (microversion 1.38)."""
        return self.max_version >= CONSUMER_TYPE_VERSION

    def _alloc_version(self) -> tuple[int, int]:
        return CONSUMER_TYPE_VERSION if self.supports_consumer_types else MIN_VERSION

    def _pin(self, version: tuple[int, int] = ERROR_CODE_VERSION) -> tuple[int, int]:
        """``version``, once the server is known to be at least MIN_VERSION."""
        self.max_version  # noqa: B018 - negotiates, or raises
        return version

    # -- resource providers -----------------------------------------------------

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
        params = _filters(name=name, in_tree=in_tree, required=required, member_of=member_of)
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
        path = f"/resource_providers/{rp_uuid}/aggregates"
        body = self._request("GET", path, self._pin()).json()
        return frozenset(body["aggregates"]), body["resource_provider_generation"]

    def set_aggregates(self, rp_uuid: str, aggregates: Iterable[str], generation: int) -> int:
        """Replace a provider's aggregates, checked against ``generation``.

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed since ``generation``.
        """
        body = {"aggregates": sorted(set(aggregates)), "resource_provider_generation": generation}
        path = f"/resource_providers/{rp_uuid}/aggregates"
        resp = self._request("PUT", path, self._pin(), json=body)
        return resp.json()["resource_provider_generation"]

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
        add, remove = frozenset(add), frozenset(remove)
        for attempt in range(conflict_retries + 1):
            current, generation = self.get_aggregates(rp_uuid)
            wanted = (current | add) - remove
            if wanted == current:
                return False
            try:
                self.set_aggregates(rp_uuid, wanted, generation)
                return True
            except exception.ConsumerGenerationConflict:
                if attempt == conflict_retries:
                    raise
                LOG.debug("Provider %s changed meanwhile; re-reading its aggregates", rp_uuid)
        raise AssertionError("unreachable")  # pragma: no cover

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
        path = f"/resource_providers/{rp_uuid}/traits"
        body = self._request("GET", path, self._pin()).json()
        return frozenset(body["traits"]), body["resource_provider_generation"]

    def put_traits(self, rp_uuid: str, traits: Iterable[str], generation: int) -> int:
        """Replace a provider's traits, checked against ``generation``.

        ``CUSTOM_*`` traits are created first (one request each).

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed since ``generation``.
        :raises PlacementBadRequest: an unknown standard trait.
        :raises PlacementNotFound: there is no such provider.
        """
        traits = sorted(set(traits))
        version = self._pin()
        for name in traits:
            if name.startswith("CUSTOM_"):
                self._request("PUT", f"/traits/{name}", version)
        body = {"traits": traits, "resource_provider_generation": generation}
        path = f"/resource_providers/{rp_uuid}/traits"
        resp = self._request("PUT", path, version, json=body)
        return resp.json()["resource_provider_generation"]

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
        add, remove = frozenset(add), frozenset(remove)
        for attempt in range(conflict_retries + 1):
            current, generation = self.get_traits(rp_uuid)
            wanted = (current | add) - remove
            if wanted == current:
                return False
            try:
                self.put_traits(rp_uuid, wanted, generation)
                return True
            except exception.ConsumerGenerationConflict:
                if attempt == conflict_retries:
                    raise
                LOG.debug("Provider %s changed meanwhile; re-reading its traits", rp_uuid)
        raise AssertionError("unreachable")  # pragma: no cover

    def set_traits(self, rp_uuid: str, traits: Iterable[str]) -> int:
        """Replace a provider's traits, creating ``CUSTOM_*`` traits as needed.

        :returns: the provider's new generation.
        :raises ConsumerGenerationConflict: the provider changed meanwhile.
        :raises PlacementBadRequest: an unknown standard trait.
        """
        traits = sorted(set(traits))
        version = self._pin()
        for name in traits:
            if name.startswith("CUSTOM_"):
                self._request("PUT", f"/traits/{name}", version)
        path = f"/resource_providers/{rp_uuid}/traits"
        generation = self._request("GET", path, version).json()["resource_provider_generation"]
        body = {"traits": traits, "resource_provider_generation": generation}
        return self._request("PUT", path, version, json=body).json()[
            "resource_provider_generation"
        ]

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

    # -- candidates -------------------------------------------------------------

    def get_allocation_candidates(
        self,
        resources: Mapping[str, int],
        *,
        required: Iterable[str] = (),
        member_of: Iterable[str] = (),
        in_tree: str | None = None,
        root_required: Iterable[str] = (),
        limit: int | None = None,
        groups: Iterable[RequestGroup] = (),
        group_policy: str | None = None,
    ) -> Candidates:
        """Ask which providers could take ``resources`` now.

        :param resources: class -> amount, all from one provider tree (the
            unnumbered group: any providers of the tree, and sharing ones).
        :param groups: numbered request groups (``resourcesN``,
            ``requiredN``, ``member_ofN``), each from one provider.
        :param group_policy: ``isolate`` or ``none``; Placement needs one
            with two numbered groups or more (``none`` is sent then, when
            not given).
        :param required: traits (``!TRAIT`` forbids).
        :param member_of: as for :meth:`list_resource_providers`; a
            ``!in:...`` (in none of these) asks for microversion 1.32 at least.
        :param in_tree: only this provider's tree.
        :param root_required: traits the root of every candidate's tree must
            have (``!TRAIT`` forbids); asks for microversion 1.35.
        :param limit: at most this many allocation requests.
        :returns: the candidates; empty lists when none fits.
        :raises PlacementBadRequest: e.g. no resources, or an unknown class.
        """
        groups = list(groups)
        member_of = list(member_of)
        unnumbered = bool(normalize(resources)) or not groups
        # NOTE: a group with no resources is refused (400), so with the
        # unnumbered group empty its tree limit goes to each numbered group.
        params = _filters(
            in_tree=in_tree if unnumbered else None, required=required, member_of=member_of
        )
        if normalize(resources):
            params.insert(0, ("resources", format_resources(resources)))
        for group in groups:
            suffix = group.suffix
            params.append((f"resources{suffix}", format_resources(group.resources)))
            if in_tree is not None and not unnumbered:
                params.append((f"in_tree{suffix}", in_tree))
            traits = [
                *sorted(group.required_traits),
                *(f"!{t}" for t in sorted(group.forbidden_traits)),
            ]
            if traits:
                params.append((f"required{suffix}", ",".join(traits)))
            params.extend((f"member_of{suffix}", m) for m in group.member_of)
        if len(groups) > 1 or group_policy:
            params.append(("group_policy", group_policy or "none"))
        roots = ",".join(root_required)
        if roots:
            params.append(("root_required", roots))
        if limit is not None:
            params.append(("limit", str(limit)))
        version = ROOT_REQUIRED_VERSION if roots or groups else IN_TREE_VERSION
        if any(m.startswith("!") for m in member_of):
            version = max(version, FORBIDDEN_AGGREGATES_VERSION)
        resp = self._request("GET", "/allocation_candidates", self._pin(version), params=params)
        # NOTE: the largest answer Placement gives (1,000 candidates and their
        # summaries at the default limit): orjson decodes it in a third of
        # the standard library's time.
        body = orjson.loads(resp.content)
        # NOTE: taken as they come: Placement only ever answers the positive
        # amounts asked for, so there is nothing to normalize (hundreds of
        # candidates per query).
        requests = [
            {rp: a["resources"] for rp, a in ar["allocations"].items()}
            for ar in body["allocation_requests"]
        ]
        mappings = [ar.get("mappings") or {} for ar in body["allocation_requests"]]
        return Candidates(requests, body["provider_summaries"], mappings)

    # -- allocations -------------------------------------------------------------

    def get_allocations(self, consumer_uuid: str) -> ConsumerAllocations:
        """Read one consumer's allocations and generation.

        :returns: the allocations; ``{}`` and generation None if it does not exist.
        """
        path = f"/allocations/{consumer_uuid}"
        body = self._request("GET", path, self._alloc_version()).json()
        return ConsumerAllocations(
            allocations=normalize_allocations(
                {rp: a["resources"] for rp, a in body.get("allocations", {}).items()}
            ),
            generation=body.get("consumer_generation"),
            project_id=body.get("project_id"),
            user_id=body.get("user_id"),
            consumer_type=body.get("consumer_type"),
        )

    def _write_body(self, write: ConsumerWrite) -> dict[str, Any]:
        body: dict[str, Any] = {
            "allocations": {
                rp: {"resources": res}
                for rp, res in normalize_allocations(write.allocations).items()
            },
            "project_id": write.project_id,
            "user_id": write.user_id,
            "consumer_generation": write.generation,
        }
        if self.supports_consumer_types:
            body["consumer_type"] = write.consumer_type
        return body

    def put_allocations(self, consumer_uuid: str, write: ConsumerWrite) -> None:
        """Replace one consumer's allocations (``{}`` empties it), generation-checked.

        :raises ConsumerGenerationConflict: the consumer changed since it was read.
        :raises ClaimRefused: not enough capacity.
        """
        body = self._write_body(write)
        self._request("PUT", f"/allocations/{consumer_uuid}", self._alloc_version(), json=body)

    def post_allocations(self, writes: Mapping[str, ConsumerWrite]) -> None:
        """Replace several consumers' allocations in one all-or-nothing request.

        :param writes: consumer uuid -> its full target.
        :raises ConsumerGenerationConflict: any consumer changed since it was read.
        :raises ClaimRefused: not enough capacity; nothing was written.
        """
        body = {consumer: self._write_body(w) for consumer, w in writes.items()}
        self._request("POST", "/allocations", self._alloc_version(), json=body)

    def reshape(
        self,
        inventories: Mapping[str, tuple[Mapping[str, Mapping[str, Any]], int]],
        writes: Mapping[str, ConsumerWrite],
    ) -> None:
        """Replace providers' inventories and consumers' allocations in one
        all-or-nothing request (``POST /reshaper``, microversion 1.30; 1.38
        when the server keeps consumer types).

        :param inventories: provider uuid -> (its whole inventory: class ->
            record, the provider generation it was read at).
        :param writes: consumer uuid -> its full target (generation-checked).
        :raises ConsumerGenerationConflict: a provider or consumer changed
            since it was read; nothing was written.
        :raises ClaimRefused: a target does not fit; nothing was written.
        :raises PlacementConflict: inventory would be removed from under an
            allocation no write moves; nothing was written.
        """
        version = CONSUMER_TYPE_VERSION if self.supports_consumer_types else RESHAPER_VERSION
        body = {
            "inventories": {
                rp: {"inventories": dict(records), "resource_provider_generation": generation}
                for rp, (records, generation) in inventories.items()
            },
            "allocations": {consumer: self._write_body(w) for consumer, w in writes.items()},
        }
        self._request("POST", "/reshaper", version, json=body)

    def delete_allocations(self, consumer_uuid: str) -> bool:
        """Delete a consumer's allocations without a generation check.

        For audit/heal tools and tests; flows use a generation-checked write.

        :returns: False when the consumer had nothing (404).
        """
        try:
            self._request("DELETE", f"/allocations/{consumer_uuid}", self._pin())
        except exception.PlacementNotFound:
            return False
        return True


def _filters(
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


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
