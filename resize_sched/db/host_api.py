"""Data API for services and compute nodes (a mixin of ``Database``).

A compute service reports itself (through the conductor) every
``[DEFAULT] report_interval`` seconds: its service row's heartbeat and its
compute node, the resource provider it registered and the inventory it set
there; a conductor writes its own row's heartbeat as often. The scheduler
reads compute nodes to name hosts and to judge "could this ever fit, empty"
without a Placement request per provider; the ``os-services`` and
``os-hypervisors`` APIs read both.
"""

import datetime
import functools
import uuid as uuidlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import sqlalchemy as sa
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.retry import retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource, writes
from resize_sched.db.values import text

#: The binary name a compute service's row carries (as Nova's ``nova-compute``).
COMPUTE_BINARY = "resize-sched-compute"
#: The binary name a conductor's row carries (as Nova's ``nova-conductor``).
CONDUCTOR_BINARY = "resize-sched-conductor"

_Row = TypeVar("_Row", bound=models.Base)


def _one(session: Session, model: type[_Row], what: str, **columns: Any) -> _Row:
    """The one row of ``model`` with these column values.

    :raises NotFound: there is none; ``what`` names it in the message.
    """
    found = session.scalars(sa.select(model).filter_by(**columns)).one_or_none()
    if found is None:
        raise exception.NotFound(what=what)
    return found


class HostApi(SessionSource):
    """Services and compute nodes."""

    @retry_on_deadlock
    def compute_node_report(
        self,
        *,
        host: str,
        node: str,
        rp_uuid: str,
        inventory: Mapping[str, Mapping[str, Any]],
        provider_generation: int | None = None,
        hypervisor_type: str = "fake",
        version: str | None = None,
        children: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> tuple[models.Service, models.ComputeNode]:
        """Record one report of a compute service: heartbeat and compute node.

        Creates the service and node rows on the first report. A node whose
        provider was re-created (a new ``rp_uuid`` for the same node name) is
        replaced. An older report (a lower provider generation than recorded)
        does not overwrite a newer inventory, nor the children.

        :param children: the child providers the service owns, uuid ->
            ``{"name", "inventory", "traits"}``; ``{}`` (a flat host) records
            None; None (a report without them) keeps what is recorded.

        :returns: the service and compute node as now stored.
        """
        host = text(host, "host")
        node = text(node, "node")
        now = models.utcnow()
        with self._writer() as session:
            service = _heartbeat(session, host, COMPUTE_BINARY, "compute", version, now)
            compute = session.scalars(
                sa.select(models.ComputeNode).where(
                    sa.or_(
                        models.ComputeNode.uuid == rp_uuid,
                        sa.and_(
                            models.ComputeNode.host == host,
                            models.ComputeNode.hypervisor_hostname == node,
                        ),
                    )
                )
            ).all()
            current = next((c for c in compute if c.uuid == rp_uuid), None)
            for stale in compute:
                if stale is not current:
                    session.delete(stale)
            if current is None:
                session.flush()
                current = models.ComputeNode(
                    uuid=rp_uuid, host=host, hypervisor_hostname=node, inventory={}
                )
                session.add(current)
            older = (
                provider_generation is not None
                and current.provider_generation is not None
                and provider_generation < current.provider_generation
            )
            if not older:
                current.inventory = {rc: dict(rec) for rc, rec in inventory.items()}
                current.provider_generation = provider_generation
                # NOTE: a child's changes do not bump the root's generation,
                # so two reports at one generation are taken as they come; the
                # next report, a report_interval later, puts a late one right.
                if children is not None:
                    current.children = _children_column(children)
            current.host = host
            current.hypervisor_hostname = node
            current.hypervisor_type = hypervisor_type
            current.reported_at = now
            session.flush()
            return service, current

    @retry_on_deadlock
    def service_report(
        self, *, host: str, binary: str, topic: str, version: str | None = None
    ) -> models.Service:
        """Record one heartbeat of a service that has no compute node (the conductor).

        Creates the service's row on its first report. Several workers of
        one service on one host report the same row: of two first reports
        racing, the one that loses the insert counts as a later report.

        :param binary: our binary name (:data:`CONDUCTOR_BINARY`).
        :param topic: the RPC topic it serves.
        :param version: the RPC API version it speaks.
        :returns: the service as now stored.
        """
        host = text(host, "host")
        for attempt in (1, 2):
            try:
                with self._writer() as session:
                    service = _heartbeat(session, host, binary, topic, version, models.utcnow())
                    session.flush()
                    return service
            except INTEGRITY_ERRORS:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def compute_node_list(self) -> list[models.ComputeNode]:
        """Every compute node, oldest first."""
        return self._list(models.ComputeNode, order_by=(models.ComputeNode.id,))

    def compute_node_get(self, rp_uuid: str) -> models.ComputeNode:
        """One compute node by its provider's uuid.

        :raises NotFound: no such node.
        """
        with self._reader() as session:
            return _one(session, models.ComputeNode, f"compute node {rp_uuid}", uuid=rp_uuid)

    def service_list(
        self, *, binary: str | None = None, host: str | None = None
    ) -> list[models.Service]:
        """Every service (of ``binary`` and on ``host``, when given), oldest first."""
        return self._list(
            models.Service,
            optional={"binary": binary, "host": host},
            order_by=(models.Service.id,),
        )

    def service_get(self, uuid: str) -> models.Service:
        """One service by its uuid.

        :raises NotFound: no such service.
        """
        with self._reader() as session:
            return _one(session, models.Service, f"service {uuid}", uuid=uuid)

    def service_get_by_host(self, host: str, binary: str = COMPUTE_BINARY) -> models.Service:
        """The service ``binary`` on ``host``.

        :raises NotFound: no such service.
        """
        with self._reader() as session:
            return _one(
                session,
                models.Service,
                f"service {binary} on host {host}",
                host=host,
                binary=binary,
            )

    @retry_on_deadlock
    def service_set_disabled(
        self,
        uuid: str,
        disabled: bool,
        reason: str | None = None,
        *,
        expected_disabled: bool | None = None,
    ) -> models.Service:
        """Disable a service (with ``reason``) or enable it (the reason is cleared).

        One ``UPDATE ... WHERE uuid = ? [AND disabled = expected_disabled]``.

        :param expected_disabled: when given, the flag the row must still have
            (compare-and-swap); None: whatever it is.
        :returns: the service as now stored.
        :raises NotFound: no such service.
        :raises Conflict: its flag is no longer ``expected_disabled``.
        """
        if reason is not None:
            reason = text(reason, "disabled_reason")
        conditions = [models.Service.uuid == uuid]
        if expected_disabled is not None:
            conditions.append(models.Service.disabled == expected_disabled)
        values = {
            "disabled": disabled,
            "disabled_reason": reason if disabled else None,
            "updated_at": models.utcnow(),
        }
        with self._writer() as session:
            done = session.execute(
                sa.update(models.Service).where(*conditions).values(**values)
            ).rowcount
            found = _one(session, models.Service, f"service {uuid}", uuid=uuid)
        if not done:
            raise exception.Conflict(
                reason=f"service {uuid} is no longer "
                f"{'disabled' if expected_disabled else 'enabled'}"
            )
        return found

    @writes
    def service_set_forced_down(
        self, session: Session, uuid: str, forced_down: bool
    ) -> models.Service:
        """Set or clear a service's ``forced_down`` flag (a forced-down service is down).

        :returns: the service as now stored.
        :raises NotFound: no such service.
        """
        session.execute(
            sa.update(models.Service)
            .where(models.Service.uuid == uuid)
            .values(forced_down=forced_down, updated_at=models.utcnow())
        )
        return _one(session, models.Service, f"service {uuid}", uuid=uuid)

    def compute_nodes_by_host(self, host: str) -> list[models.ComputeNode]:
        """The compute nodes of one host, oldest first."""
        return self._list(models.ComputeNode, host=host, order_by=(models.ComputeNode.id,))


def _heartbeat(
    session: Session,
    host: str,
    binary: str,
    topic: str,
    version: str | None,
    now: Any,
) -> models.Service:
    """Count one report of ``binary`` on ``host`` (its row made on the first)."""
    service = session.scalars(
        sa.select(models.Service).where(
            models.Service.host == host, models.Service.binary == binary
        )
    ).one_or_none()
    if service is None:
        service = models.Service(
            uuid=str(uuidlib.uuid4()),
            host=host,
            binary=binary,
            topic=topic,
            disabled=False,
            forced_down=False,
            report_count=0,
        )
        session.add(service)
    service.report_count = (service.report_count or 0) + 1
    service.last_seen_up = now
    service.updated_at = now
    if version is not None:
        service.version = version
    return service


def _children_column(children: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The ``children`` column of a report's children (None: a flat host)."""
    if not children:
        return None
    return {
        uuid: {
            "name": child["name"],
            "inventory": {rc: dict(r) for rc, r in child["inventory"].items()},
            "traits": sorted(child["traits"]),
        }
        for uuid, child in sorted(children.items())
    }


def service_is_up(service: models.Service, down_time: float, now: Any = None) -> bool:
    """Whether a service reported within the last ``down_time`` seconds (and
    is not forced down), as Nova's database service group driver judges.

    :param service: the service row.
    :param down_time: ``[DEFAULT] service_down_time``.
    :param now: the time to judge at; the current time when None.
    """
    if service.forced_down or service.last_seen_up is None:
        return False
    now = now if now is not None else models.utcnow()
    return (now - service.last_seen_up).total_seconds() <= down_time


def compute_node_inventories(
    db: HostApi, uuids: Iterable[str] | None = None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """The host name and last reported inventory of compute nodes, by provider uuid.

    One light read (no ORM objects) for the scheduler: host names for the
    candidates it weighs, inventories when it judges whether a request could
    ever fit.

    :param db: the database.
    :param uuids: only these providers (read in chunks); None: every node.
    :returns: provider uuid -> (host, class -> inventory record); providers
        without a node are absent.
    """
    columns = (models.ComputeNode.uuid, models.ComputeNode.host, models.ComputeNode.inventory)
    wanted = None if uuids is None else sorted(set(uuids))
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    with db._reader() as session:
        if wanted is None:
            rows = list(session.execute(sa.select(*columns)))
        else:
            rows = []
            for start in range(0, len(wanted), _UUID_CHUNK):
                chunk = wanted[start : start + _UUID_CHUNK]
                rows.extend(
                    session.execute(sa.select(*columns).where(models.ComputeNode.uuid.in_(chunk)))
                )
    for uuid, host, inventory in rows:
        out[uuid] = (host, inventory or {})
    return out


class NodeRow(NamedTuple):
    """A compute node and its compute service, as one host state needs them."""

    uuid: str
    host: str
    hypervisor_hostname: str
    hypervisor_type: str
    inventory: dict[str, Any]
    failed_builds: int
    #: None: no service row (its service never reported)
    disabled: bool | None
    forced_down: bool
    last_seen_up: datetime.datetime | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> "NodeRow":
        """The node of a :func:`select_node_rows` row."""
        uuid, host, hh, ht, inventory, failed, disabled, forced, seen = row
        return cls(
            uuid,
            host,
            hh,
            ht or "fake",
            inventory or {},
            failed or 0,
            None if disabled is None else bool(disabled),
            bool(forced),
            seen,
        )


@functools.cache
def select_node_rows(inventory: bool = True) -> sa.Select[Any]:
    """Compute nodes (by provider uuid, bound to ``uuids``, expanding) with
    their compute services' flags, and their inventories (else NULL) when
    ``inventory``: the columns of :class:`NodeRow`. Built once (see
    :func:`resize_sched.db.session.cas_update`)."""
    node, service = models.ComputeNode, models.Service
    return (
        sa.select(
            node.uuid,
            node.host,
            node.hypervisor_hostname,
            node.hypervisor_type,
            node.inventory if inventory else sa.null(),
            node.failed_builds,
            service.disabled,
            service.forced_down,
            service.last_seen_up,
        )
        .join(
            service,
            sa.and_(service.host == node.host, service.binary == COMPUTE_BINARY),
            isouter=True,
        )
        .where(node.uuid.in_(sa.bindparam("uuids", expanding=True)))
    )


class ReportedNode(NamedTuple):
    """A compute node as its service last reported it (a resize's source, or
    any host the scheduler judges without asking Placement)."""

    uuid: str
    host: str
    #: resource class -> Placement inventory record
    inventory: dict[str, Any]
    #: the compute service row's flag
    disabled: bool
    #: the node as its host state reads it (read for a resize's source
    #: only): a host state built for the source reads nothing more
    state: NodeRow | None = None


def compute_node_for_source(db: HostApi, rp_uuid: str) -> ReportedNode | None:
    """A resize source's compute node as its service last reported it.

    One light read for the scheduler: the host name, the inventory and
    whether the host's compute service is disabled (the disabled flag is the
    service row's, which ``os-services`` and ``resize-sched-manage host``
    set together with the provider's ``COMPUTE_STATUS_DISABLED`` trait).

    :returns: the node, or None when no compute service of this deployment
        reported the provider.
    """
    with db._reader() as session:
        row = session.execute(select_node_rows(), {"uuids": [rp_uuid]}).first()
    if row is None:
        return None
    state = NodeRow.of(row)
    return ReportedNode(state.uuid, state.host, state.inventory, bool(state.disabled), state)


def reported_compute_nodes(db: HostApi) -> list[ReportedNode]:
    """Every compute node as its service last reported it.

    One light read (one query, no ORM objects) for the scheduler's verdict of
    a failure: what :func:`compute_node_for_source` reads for one node, for
    all of them (``disabled`` is False for a host with no service row).
    """
    with db._reader() as session:
        rows = list(session.execute(_select_reported_nodes()))
    return [
        ReportedNode(uuid, host, inventory or {}, bool(disabled))
        for uuid, host, inventory, disabled in rows
    ]


def _select_reported_nodes() -> sa.Select[Any]:
    """Compute nodes with their compute service's disabled flag.

    Columns: provider uuid, host, inventory, disabled (None without a service
    row: the outer join keeps a node whose service row is missing).
    """
    node, service = models.ComputeNode, models.Service
    return sa.select(node.uuid, node.host, node.inventory, service.disabled).join(
        service,
        sa.and_(service.host == node.host, service.binary == COMPUTE_BINARY),
        isouter=True,
    )


#: Provider uuids per ``IN (...)`` in :func:`compute_node_inventories`.
_UUID_CHUNK = 500
