"""A benchmark cloud, set up fast enough for 10,000 hosts.

:func:`build_cloud` registers ``hosts`` compute hosts in Placement as the
compute service would (a provider, its full inventory records, the
deployment's owner trait), from a pool of threads, each with its own client,
and records each host's compute node in resize_sched's database as the
compute service's report does (``Database.compute_node_report``: the
inventory and the provider generation). Servers are not built through the
build flow: their allocations are written straight to Placement, many
consumers per ``POST /allocations``, and their rows (ACTIVE, on their host,
with their request spec) inserted in bulk. What a server holds and what its
row says are exactly what a build leaves behind; only the route is shorter.

:class:`PlacementTimer` measures, for one client, the wall time during which
at least one of its requests was in flight, so "our own time" is the rest;
:class:`DatabaseTimer`, for our database, the wall time during which at least
one of our transactions was open, so where our own time went.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched import resources as rs
from resize_sched.db import models
from resize_sched.db.api import Database
from resize_sched.placement.client import (
    ERROR_CODE_VERSION,
    INSTANCE,
    INVENTORY_VERSION,
    ConsumerWrite,
    PlacementClient,
    owner_trait,
)

#: Every host's size: a busy host holds ``per_host`` smalls (2 VCPU each).
HOST_VCPUS, HOST_MEMORY_MB, HOST_DISK_GB = 8, 8192, 400
#: Flavors: what servers start with, what they resize to, and one that fits
#: no host even empty (16 VCPU on 8-VCPU hosts).
FLAVORS = {
    "small": (2, 2048, 20),
    "medium": (4, 4096, 40),
    "huge": (16, 4096, 40),
}
PROJECT = USER = "bench"
#: Consumers per ``POST /allocations`` when placing servers.
ALLOCATION_BATCH = 200
#: Times a bulk allocation write refused by a concurrent one is sent again.
DEADLOCK_RETRIES = 10
#: Rows per database transaction when recording servers.
ROW_BATCH = 1000


def host_name(i: int) -> str:
    """The name of host ``i`` (sorted names are in index order)."""
    return f"host{i:05d}"


def inventory_records() -> dict[str, dict[str, Any]]:
    """The full inventory records a compute service sets (as ``inventory_from_conf``)."""
    return rs.inventory_records(
        {rs.VCPU: HOST_VCPUS, rs.MEMORY_MB: HOST_MEMORY_MB, rs.DISK_GB: HOST_DISK_GB}
    )


class _WallTimer:
    """Wall time with at least one call in flight; concurrent calls count once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight = 0
        self._since = 0.0
        self._total = 0.0
        #: the busy spans since the last :meth:`reset` (perf_counter seconds)
        self._spans: list[tuple[float, float]] = []
        #: calls entered since the last :meth:`reset`
        self.count = 0

    def _enter(self) -> None:
        with self._lock:
            if self._in_flight == 0:
                self._since = time.perf_counter()
            self._in_flight += 1
            self.count += 1

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                now = time.perf_counter()
                self._total += now - self._since
                self._spans.append((self._since, now))

    def reset(self) -> None:
        """Start counting from zero (a call in flight counts from now)."""
        with self._lock:
            self._total = 0.0
            self._since = time.perf_counter()
            self.count = 0
            self._spans = []

    def spans(self) -> list[tuple[float, float]]:
        """The busy spans since the last :meth:`reset`, disjoint, in order
        (one still open ends now)."""
        with self._lock:
            if self._in_flight:
                return [*self._spans, (self._since, time.perf_counter())]
            return list(self._spans)

    def ms_outside(self, other: _WallTimer) -> float:
        """Milliseconds busy here while ``other`` was not."""
        theirs = other.spans()
        total = 0.0
        for start, end in self.spans():
            covered = sum(max(0.0, min(end, e) - max(start, s)) for s, e in theirs)
            total += end - start - covered
        return total * 1000

    @property
    def ms(self) -> float:
        """Milliseconds with a call in flight since the last :meth:`reset`."""
        with self._lock:
            extra = time.perf_counter() - self._since if self._in_flight else 0.0
            return (self._total + extra) * 1000


class PlacementTimer(_WallTimer):
    """Wall time one client spends with at least one request in flight.

    Wraps the client's one request method (an instance attribute shadows the
    method); concurrent requests of that client count once, so the time
    outside them is what the caller spent itself.

    :param client: the client to time.
    """

    def __init__(self, client: PlacementClient) -> None:
        super().__init__()
        original = client._request

        def timed(*args: Any, **kwargs: Any) -> Any:
            self._enter()
            try:
                return original(*args, **kwargs)
            finally:
                self._leave()

        client._request = timed  # type: ignore[method-assign]


class DatabaseTimer(_WallTimer):
    """Wall time with at least one of our database transactions open.

    Wraps the database's ``_reader`` and ``_writer`` (instance attributes
    shadow the methods), through which every data API call opens its one
    transaction: the time counts from before the connection is checked out
    to after the commit, the ORM's work inside included. Transactions of
    every thread count, concurrent ones once, so the figure is one worker's
    only when that worker is the only one using the database; :attr:`count`
    is the transactions opened, :attr:`commits` those that write (each a
    commit the database makes durable) and :attr:`statements` the SQL
    statements sent in them (``BEGIN`` and ``COMMIT`` not counted).

    :param db: the database to time.
    """

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.commits = 0
        self.statements = 0
        for name in ("_reader", "_writer"):
            setattr(db, name, self._timed(getattr(db, name), writes=name == "_writer"))
        sa.event.listen(db.engine, "before_cursor_execute", self._statement)

    def _statement(self, *_args: Any) -> None:
        with self._lock:
            self.statements += 1

    def reset(self) -> None:
        """Start counting from zero, commits and statements too."""
        super().reset()
        with self._lock:
            self.commits = 0
            self.statements = 0

    def _timed(
        self,
        original: Callable[[], contextlib.AbstractContextManager[Session]],
        *,
        writes: bool,
    ) -> Callable[[], contextlib.AbstractContextManager[Session]]:
        @contextlib.contextmanager
        def timed() -> Iterator[Session]:
            if writes:
                with self._lock:
                    self.commits += 1
            self._enter()
            try:
                with original() as session:
                    yield session
            finally:
                self._leave()

        return timed


@dataclass
class Cloud:
    """One benchmark cloud: Placement, our database, hosts, flavors, servers."""

    hosts: dict[str, str]  # name -> provider uuid
    flavors: dict[str, Any]  # name -> Flavor row
    servers: list[str]  # server uuids, in placement order
    empty_hosts: list[str]
    setup_s: dict[str, float] = field(default_factory=dict)
    how: str = ""


def _per_thread(make_client: Callable[[], PlacementClient]) -> Callable[[], PlacementClient]:
    """A getter of the calling thread's own client, made on first use."""
    local = threading.local()

    def get() -> PlacementClient:
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = make_client()
        return client

    return get


def _register_host(client: PlacementClient, name: str, trait: str) -> tuple[str, str, int]:
    """A provider named ``name`` with the full inventory and the owner trait.

    Three requests: create (with our uuid), inventory, traits; each checked
    against the generation the previous one returned.
    """
    rp = str(uuidlib.uuid4())
    created = client.create_resource_provider(name, uuid=rp)
    body = {
        "resource_provider_generation": created["generation"],
        "inventories": inventory_records(),
    }
    generation = client._request(
        "PUT", f"/resource_providers/{rp}/inventories", INVENTORY_VERSION, json=body
    ).json()["resource_provider_generation"]
    traits = {"traits": [trait], "resource_provider_generation": generation}
    generation = client._request(
        "PUT", f"/resource_providers/{rp}/traits", ERROR_CODE_VERSION, json=traits
    ).json()["resource_provider_generation"]
    return name, rp, generation


def build_cloud(
    *,
    make_client: Callable[[], PlacementClient],
    db: Database,
    deployment_name: str,
    hosts: int,
    per_host: int,
    threads: int = 8,
    progress: Callable[[str], None] = lambda _m: None,
) -> Cloud:
    """Register ``hosts`` hosts and place ``per_host`` smalls on nine in ten of them.

    :param make_client: builds a new Placement client (one per thread).
    :param db: resize_sched's database, schema synced.
    :param deployment_name: ``[placement] deployment_name`` (the owner trait).
    :param threads: threads registering providers and writing allocations.
    :param progress: called with a line now and then.
    """
    timings: dict[str, float] = {}
    trait = owner_trait(deployment_name)
    client = make_client()
    client._request("PUT", f"/traits/{trait}", ERROR_CODE_VERSION)
    flavors = {name: db.flavor_create(name, *size) for name, size in FLAVORS.items()}

    started = time.perf_counter()
    registered: dict[str, tuple[str, int]] = {}
    get_client = _per_thread(make_client)

    def register(name: str) -> tuple[str, str, int]:
        return _register_host(get_client(), name, trait)

    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="bench-setup") as pool:
        futures = [pool.submit(register, host_name(i)) for i in range(hosts)]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, rp, generation = future.result()
            registered[name] = (rp, generation)
            if done % 2000 == 0:
                progress(f"  {done} of {hosts} providers registered")
    timings["register providers"] = time.perf_counter() - started

    started = time.perf_counter()
    records = inventory_records()
    for name in sorted(registered):
        rp, generation = registered[name]
        db.compute_node_report(
            host=name, node=name, rp_uuid=rp, inventory=records, provider_generation=generation
        )
    timings["compute node reports"] = time.perf_counter() - started

    names = sorted(registered)
    host_map = {name: registered[name][0] for name in names}
    empty = max(1, hosts // 10)
    busy = names[: hosts - empty]
    small = flavors["small"]
    snapshot = small.to_snapshot()
    request = rs.flavor_request(snapshot)
    # Servers are interleaved across hosts so consecutive ones sit on different hosts.
    placed = [(str(uuidlib.uuid4()), busy[i % len(busy)]) for i in range(len(busy) * per_host)]

    started = time.perf_counter()
    batches = [placed[i : i + ALLOCATION_BATCH] for i in range(0, len(placed), ALLOCATION_BATCH)]

    def write(batch: list[tuple[str, str]], get: Callable[[], PlacementClient]) -> None:
        writes = {
            server: ConsumerWrite(
                allocations={host_map[host]: request.resources},
                project_id=PROJECT,
                user_id=USER,
                generation=None,
                consumer_type=INSTANCE,
            )
            for server, host in batch
        }
        for attempt in range(DEADLOCK_RETRIES + 1):
            try:
                get().post_allocations(writes)
                return
            except (exception.PlacementUnavailable, exception.ConsumerGenerationConflict) as exc:
                # NOTE: concurrent bulk writes touch the same providers: Placement
                # answers 409 concurrent_update, or on MariaDB 500 to an InnoDB
                # deadlock. Either way nothing was written (the consumers are
                # new), so the same write is sent again.
                if attempt == DEADLOCK_RETRIES or not (
                    "Deadlock" in str(exc) or "concurrently updated" in str(exc)
                ):
                    raise

    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="bench-alloc") as pool:
        for future in [pool.submit(write, batch, get_client) for batch in batches]:
            future.result()
    timings["server allocations"] = time.perf_counter() - started
    # NOTE: a consumer's first write leaves it at generation 1, as after a build.
    generation = client.get_allocations(placed[0][0]).generation if placed else None

    started = time.perf_counter()
    for i in range(0, len(placed), ROW_BATCH):
        with db._writer() as session:
            for n, (server, host) in enumerate(placed[i : i + ROW_BATCH], i):
                session.add(
                    models.Server(
                        uuid=server,
                        name=f"vm{n}",
                        project_id=PROJECT,
                        user_id=USER,
                        flavor=snapshot,
                        status=models.STATUS_ACTIVE,
                        vm_state=models.VM_ACTIVE,
                        task_state=None,
                        host=host,
                        node=host,
                        rp_uuid=host_map[host],
                        needs_heal=False,
                        placement_generation=generation,
                    )
                )
            session.flush()
            for server, _host in placed[i : i + ROW_BATCH]:
                session.add(
                    models.RequestSpec(
                        server_uuid=server,
                        resources=dict(request.resources),
                        required_traits=sorted(request.required_traits),
                        ignore_hosts=[],
                        force_hosts=[],
                        scheduler_hints={},
                    )
                )
    timings["server rows"] = time.perf_counter() - started
    return Cloud(
        hosts=host_map,
        flavors=flavors,
        servers=[server for server, _ in placed],
        empty_hosts=names[hosts - empty :],
        setup_s=timings,
        how=(
            f"providers registered by {threads} threads (create, inventory, owner trait); "
            "a compute node report per host in our database; servers placed by direct "
            f"allocation writes ({ALLOCATION_BATCH} consumers per POST /allocations) and "
            "bulk-inserted rows, not through the build flow"
        ),
    )
