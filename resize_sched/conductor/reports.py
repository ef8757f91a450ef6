"""What the conductor does with a compute service's periodic report.

A report (conductor RPC API 1.2, ``compute_report``) carries the service's
host, its node, the resource provider it registered, the inventory it set
there and the provider generation it read or wrote it at; from 1.3 also the
child providers the service keeps under that root (uuid -> name, inventory
records, traits; ``{}`` on a flat host), recorded as the node's
``children``. The report is the service's heartbeat
(``services.last_seen_up``) and keeps its compute node current
(:meth:`resize_sched.db.host_api.HostApi.compute_node_report`). A report
without children (an older compute service, or one whose conductor RPC is
capped at 1.2) leaves the children last recorded as they are; the root's
``inventory`` is the root's alone either way.

Reports are casts and may be handled out of order, or late:

* a report naming the provider the node already has but an older generation
  refreshes the heartbeat and leaves the newer inventory alone (the data API
  compares generations);
* a report whose provider holds its classes elsewhere than recorded (a
  NUMA cell now holds the VCPU the root held: the host was reshaped) first
  makes the records of the host's servers and resizes follow
  (:mod:`resize_sched.conductor.reshape`);
* a report naming another provider than the node's replaces the node (its
  provider was deleted and the service registered a new one), unless that
  provider is no longer ours in Placement: then it is a stale report from
  before the re-creation, and is dropped.

When a node is new (first report, or a re-created provider), the disabled
flag of its service and the ``COMPUTE_STATUS_DISABLED`` trait of its
provider are made to agree: the service row wins, except on the service's
very first report, when a host already disabled in Placement (``host
disable`` before services were recorded) marks the new row disabled.

The conductor reports itself too (:class:`ConductorHeartbeat`): its own
service row (binary ``resize-sched-conductor`` on ``[DEFAULT] host``), at
start and every ``[DEFAULT] report_interval`` seconds, straight to the
database, so ``os-services`` lists it up or down as Nova lists
``nova-conductor``.
"""

import re
import threading
from collections.abc import Mapping
from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conductor import reshape, rpcapi
from resize_sched.db import ERRORS as DB_ERRORS
from resize_sched.db.api import Database
from resize_sched.db.host_api import CONDUCTOR_BINARY
from resize_sched.placement.client import DISABLED_TRAIT, PlacementClient, owner_trait

LOG = logging.getLogger(__name__)

#: The reason recorded when a first report finds its host disabled in Placement.
ADOPTED_REASON = "disabled in Placement before the service first reported"

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

_RECORD_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio")


def malformed_inventory(inventory: Any) -> str | None:
    """What is wrong with a report's inventory, if anything.

    :returns: the problem, or None when it is class -> record with numeric fields.
    """
    if not isinstance(inventory, Mapping):
        return f"inventory is not a mapping: {inventory!r:.80}"
    for rc, record in inventory.items():
        if not isinstance(rc, str) or not rc or len(rc) > 255:
            return f"inventory has a bad resource class: {rc!r:.80}"
        if not isinstance(record, Mapping):
            return f"inventory of {rc} is not a mapping: {record!r:.80}"
        for name, value in record.items():
            if name not in _RECORD_FIELDS:
                return f"inventory of {rc} has an unknown field {name!r:.40}"
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"inventory of {rc}: {name} is not a number: {value!r:.40}"
        if not isinstance(record.get("total"), int):
            return f"inventory of {rc} has no integer total"
    return None


def malformed_children(children: Any) -> str | None:
    """What is wrong with a report's children, if anything.

    :returns: the problem, or None when it is uuid -> ``{"name": text,
        "inventory": records, "traits": [text, ...]}``.
    """
    if not isinstance(children, Mapping):
        return f"children is not a mapping: {children!r:.80}"
    for uuid, child in children.items():
        if not isinstance(uuid, str) or not _UUID.match(uuid):
            return f"children has a key that is not a uuid: {uuid!r:.80}"
        if not isinstance(child, Mapping) or set(child) != {"name", "inventory", "traits"}:
            return f"child {uuid} is not name, inventory and traits: {child!r:.80}"
        name, traits = child["name"], child["traits"]
        if not isinstance(name, str) or not name or len(name) > 200:
            return f"child {uuid} has a bad name: {name!r:.80}"
        problem = malformed_inventory(child["inventory"])
        if problem:
            return f"child {uuid}: {problem}"
        if not isinstance(traits, list | tuple) or not all(
            isinstance(t, str) and 0 < len(t) <= 255 for t in traits
        ):
            return f"child {uuid} has bad traits: {traits!r:.80}"
    return None


def record(
    db: Database,
    client: PlacementClient,
    deployment_name: str,
    *,
    host: str,
    node: str,
    rp_uuid: str,
    inventory: Mapping[str, Mapping[str, Any]],
    provider_generation: int | None,
    version: str,
    children: Mapping[str, Mapping[str, Any]] | None = None,
) -> bool:
    """Record one report (see the module doc).

    :param deployment_name: ``[placement] deployment_name`` (the owner trait).
    :param children: the service's child providers (``{}``: a flat host);
        None: the report had none (the children recorded are kept).
    :returns: whether it was recorded (False: a stale report, dropped).
    :raises PlacementError: Placement could not be read while checking a
        provider change (nothing was recorded; the next report retries).
    """
    owner = owner_trait(deployment_name)
    nodes = {n.uuid: n for n in db.compute_nodes_by_host(host) if n.hypervisor_hostname == node}
    known = set(nodes)
    replaced = bool(known) and rp_uuid not in known
    new_node = rp_uuid not in known
    if replaced:
        try:
            traits, _ = client.get_traits(rp_uuid)
        except exception.PlacementNotFound:
            traits = frozenset()
        if owner not in traits:
            LOG.info(
                "Stale report of %s/%s dropped: provider %s is not ours (any more)",
                host,
                node,
                rp_uuid,
            )
            return False
    recorded = nodes.get(rp_uuid)
    if recorded is not None:
        # NOTE: before the report is recorded, so a failure here leaves the
        # old layout recorded and the next report follows again.
        before = reshape.layout(rp_uuid, recorded.inventory, recorded.children)
        kept = recorded.children if children is None else children
        after = reshape.layout(rp_uuid, inventory, kept)
        if before != after:
            reshape.follow(db, client, host, rp_uuid, before, after)
    service, _ = db.compute_node_report(
        host=host,
        node=node,
        rp_uuid=rp_uuid,
        inventory=inventory,
        provider_generation=provider_generation,
        version=version,
        children=children,
    )
    if new_node:
        _agree_disabled(db, client, owner, service, rp_uuid)
    return True


def _agree_disabled(
    db: Database, client: PlacementClient, owner: str, service: Any, rp_uuid: str
) -> None:
    """Make the new node's provider trait and its service's flag agree."""
    try:
        traits, _ = client.get_traits(rp_uuid)
    except exception.PlacementError as exc:
        LOG.warning("Could not read the traits of %s (%s): %s", service.host, rp_uuid, exc)
        return
    if owner not in traits:
        return
    in_placement = DISABLED_TRAIT in traits
    if in_placement == service.disabled:
        return
    if in_placement and service.report_count <= 1:
        try:
            db.service_set_disabled(service.uuid, True, ADOPTED_REASON, expected_disabled=False)
        except exception.Conflict:
            return
        LOG.info("Service of %s recorded disabled, as its provider is", service.host)
        return
    try:
        if service.disabled:
            client.update_traits(rp_uuid, add=[DISABLED_TRAIT])
        else:
            client.update_traits(rp_uuid, remove=[DISABLED_TRAIT])
    except exception.PlacementError as exc:
        LOG.warning("Could not set the disabled trait of %s (%s): %s", service.host, rp_uuid, exc)
        return
    LOG.info(
        "Provider %s of %s %s, as its service is",
        rp_uuid,
        service.host,
        "disabled" if service.disabled else "enabled",
    )


class ConductorHeartbeat:
    """A conductor's own service row, kept fresh by a background thread.

    :param db: the database.
    :param host: ``[DEFAULT] host``.
    :param interval: ``[DEFAULT] report_interval``, in seconds.
    """

    def __init__(self, db: Database, host: str, interval: float) -> None:
        self.db = db
        self.host = host
        self.interval = interval
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> bool:
        """Record one heartbeat now.

        :returns: whether it was recorded (False: the database refused, logged;
            the next beat tries again).
        """
        try:
            self.db.service_report(
                host=self.host, binary=CONDUCTOR_BINARY, topic=rpcapi.TOPIC, version=rpcapi.VERSION
            )
        except DB_ERRORS as exc:
            LOG.warning("Could not record the conductor's heartbeat on %s: %s", self.host, exc)
            return False
        return True

    def start(self) -> None:
        """Beat now, then every ``interval`` seconds until :meth:`stop`."""
        self.beat()
        self._thread = threading.Thread(target=self._loop, name="conductor-heartbeat", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stopping.wait(self.interval):
            self.beat()

    def stop(self) -> None:
        """Stop beating (the row then turns ``down`` after ``service_down_time``)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
