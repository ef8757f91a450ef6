"""A thin, typed client for the Placement API: pinned microversions, typed errors.

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

The client is one class in several modules, each with one job: the plumbing
(one request, the microversion negotiated once), allocation candidates and
allocations are here; the resource-provider calls are
:mod:`~resize_sched.placement.providers`; the pinned versions
:mod:`~resize_sched.placement.microversions`; the mapping of an error answer
to a typed error :mod:`~resize_sched.placement.errors`; the traits that mark
our providers :mod:`~resize_sched.placement.traits`. This module re-exports
their names, which callers import from here.
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

# NOTE: the error mapping, the microversions and the traits were defined here
# before the client was split by job; callers import them from this module.
from resize_sched.placement.errors import (
    CONCURRENT_UPDATE,
    error_for,
    parse_error,
    shown_request,
)
from resize_sched.placement.microversions import (
    CONSUMER_TYPE_VERSION,
    ERROR_CODE_VERSION,
    FORBIDDEN_AGGREGATES_VERSION,
    IN_TREE_VERSION,
    INVENTORY_VERSION,
    MIN_VERSION,
    PROVIDER_ALLOCATIONS_VERSION,
    RESHAPER_VERSION,
    ROOT_REQUIRED_VERSION,
    parse_version,
)
from resize_sched.placement.microversions import mv as _mv
from resize_sched.placement.providers import TRAIT_CONFLICT_RETRIES, ProviderCalls
from resize_sched.placement.providers import filter_params as _filters
from resize_sched.placement.traits import (
    CHILD_TRAIT_PREFIX,
    DISABLED_TRAIT,
    NOVA_COMPUTE_TRAIT,
    OWNER_TRAIT_PREFIX,
    SHARING_TRAIT,
    child_trait,
    owner_trait,
)
from resize_sched.resources import (
    Allocations,
    RequestGroup,
    format_resources,
    normalize,
    normalize_allocations,
)

__all__ = [
    "CHILD_TRAIT_PREFIX",
    "CONCURRENT_UPDATE",
    "CONSUMER_TYPE_VERSION",
    "DISABLED_TRAIT",
    "ERROR_CODE_VERSION",
    "FORBIDDEN_AGGREGATES_VERSION",
    "INSTANCE",
    "INVENTORY_VERSION",
    "IN_TREE_VERSION",
    "MIGRATION",
    "MIN_VERSION",
    "NOVA_COMPUTE_TRAIT",
    "OWNER_TRAIT_PREFIX",
    "PROVIDER_ALLOCATIONS_VERSION",
    "RESHAPER_VERSION",
    "ROOT_REQUIRED_VERSION",
    "SHARING_TRAIT",
    "TRAIT_CONFLICT_RETRIES",
    "Candidates",
    "ConsumerAllocations",
    "ConsumerWrite",
    "PlacementClient",
    "child_trait",
    "error_for",
    "owner_trait",
    "parse_error",
    "parse_version",
]

LOG = logging.getLogger(__name__)

INSTANCE = "INSTANCE"
MIGRATION = "MIGRATION"


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


class PlacementClient(ProviderCalls):
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
            raise exception.PlacementUnavailable(
                method=method, url=shown_request(path), reason=str(e)
            ) from e
        except ks_exc.ClientException as e:  # authentication and the like
            raise exception.PlacementError(reason=f"{method} {shown_request(path)}: {e}") from e
        LOG.debug("%s %s %s %.1f ms", method, resp.url, resp.status_code, _ms(started))
        if 200 <= resp.status_code < 300:
            return resp
        code, detail = parse_error(resp)
        raise error_for(method, resp.url or path, resp.status_code, code, detail, path=path)

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


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
