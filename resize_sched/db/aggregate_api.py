"""Data API for host aggregates and availability zones (a mixin of ``Database``).

An aggregate is a name, a uuid (the Placement aggregate its hosts' root
providers are members of, see :mod:`resize_sched.placement.aggregates`), a
set of hosts (compute services' host names) and metadata. Its availability
zone is the metadata key ``availability_zone``, as in Nova; a host is in the
zone of the aggregates it is in that have one, else in ``[DEFAULT]
default_availability_zone``. No host may be in two zones: every change that
could put one there (a host added, a zone set or changed) is checked in the
same transaction that makes it.

The scheduling policies read zones and tenant isolation here, one query
each (:meth:`AggregateApi.zone_aggregates`,
:meth:`AggregateApi.tenant_aggregates`), never Placement.
"""

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.host_api import COMPUTE_BINARY
from resize_sched.db.retry import (
    call_uuid,
    commit_may_have_landed,
    earlier_run_row,
    retry_on_deadlock,
)
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource, writes

LOG = logging.getLogger(__name__)

#: The metadata key that makes an aggregate an availability zone.
ZONE_KEY = "availability_zone"
#: Metadata keys starting with this name a project whose servers the
#: aggregate's hosts take (Nova's ``filter_tenant_id``, ``filter_tenant_id2``...).
TENANT_KEY_PREFIX = "filter_tenant_id"

# The change names of InvalidAggregateAction: what Nova's messages say.
ADD = "add host to"
UPDATE = "update"
UPDATE_META = "update metadata of"
DELETE = "remove"


@dataclass(frozen=True)
class AggregateView:
    """One aggregate with its hosts and metadata, as read in one transaction."""

    id: int
    uuid: str
    name: str
    created_at: datetime | None
    updated_at: datetime | None
    hosts: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def availability_zone(self) -> str | None:
        """The aggregate's zone (None: it makes none)."""
        return self.metadata.get(ZONE_KEY)


@dataclass(frozen=True)
class ZoneMap:
    """The zones aggregates make: zone -> the uuids of its aggregates, and
    the zone of the host asked about (None: in no zone aggregate, so in the
    default zone)."""

    zones: Mapping[str, list[str]]
    host_zone: str | None = None


@functools.cache
def _zone_query(with_host: bool) -> sa.Select[Any]:
    """Every zone aggregate's zone and uuid, in order, and whether the host
    bound to ``host`` is in it (``with_host``; else false); built once (see
    :func:`resize_sched.db.session.cas_update`)."""
    members = (
        sa.select(models.AggregateHost.id)
        .where(
            models.AggregateHost.aggregate_id == models.Aggregate.id,
            models.AggregateHost.host == sa.bindparam("host"),
        )
        .exists()
        if with_host
        else sa.false()
    )
    return (
        sa.select(models.AggregateMetadata.value, models.Aggregate.uuid, members)
        .join(models.Aggregate, models.Aggregate.id == models.AggregateMetadata.aggregate_id)
        .where(models.AggregateMetadata.key == ZONE_KEY)
        .order_by(models.Aggregate.id)
    )


def zone_map_in(session: Session, host: str | None = None) -> ZoneMap:
    """Within ``session``: :meth:`AggregateApi.zone_aggregates` (a step's
    read brings it with the migration: see
    :attr:`resize_sched.db.steps.StepRun.zones`)."""
    zones: dict[str, list[str]] = {}
    host_zone = None
    rows = session.execute(_zone_query(host is not None), {"host": host})
    for zone, uuid, has_host in rows:
        zones.setdefault(zone, []).append(uuid)
        if has_host:
            host_zone = zone
    return ZoneMap(zones, host_zone)


def _views(session: Session, aggregates: Iterable[models.Aggregate]) -> list[AggregateView]:
    """The aggregates with their hosts and metadata (two more queries in all)."""
    rows = list(aggregates)
    ids = [a.id for a in rows]
    hosts: dict[int, list[str]] = {i: [] for i in ids}
    meta: dict[int, dict[str, str]] = {i: {} for i in ids}
    if ids:
        for agg_id, host in session.execute(
            sa.select(models.AggregateHost.aggregate_id, models.AggregateHost.host)
            .where(models.AggregateHost.aggregate_id.in_(ids))
            .order_by(models.AggregateHost.id)
        ):
            hosts[agg_id].append(host)
        for agg_id, key, value in session.execute(
            sa.select(
                models.AggregateMetadata.aggregate_id,
                models.AggregateMetadata.key,
                models.AggregateMetadata.value,
            ).where(models.AggregateMetadata.aggregate_id.in_(ids))
        ):
            meta[agg_id][key] = value
    return [
        AggregateView(
            a.id, a.uuid, a.name, a.created_at, a.updated_at, tuple(hosts[a.id]), meta[a.id]
        )
        for a in rows
    ]


def _get(session: Session, aggregate_id: int) -> AggregateView:
    row = session.get(models.Aggregate, aggregate_id)
    if row is None:
        raise exception.AggregateNotFound(aggregate_id=aggregate_id)
    return _views(session, [row])[0]


def _check_name_free(session: Session, name: str, but: int | None = None) -> None:
    query = sa.select(models.Aggregate.id).where(models.Aggregate.name == name)
    if but is not None:
        query = query.where(models.Aggregate.id != but)
    if session.scalars(query).first() is not None:
        raise exception.AggregateNameExists(aggregate_name=name)


def _check_zone(
    session: Session, aggregate: AggregateView, zone: str | None, hosts: Iterable[str], what: str
) -> None:
    """Refuse ``zone`` for ``aggregate`` if one of ``hosts`` is in another
    aggregate with a different zone (Nova's ``is_safe_to_update_az``)."""
    if zone is None:
        return
    if not zone.strip():
        raise exception.InvalidAggregateAction(
            what=what,
            aggregate_id=aggregate.id,
            reason=f"Aggregate {aggregate.name} does not support empty named availability zone",
        )
    hosts = list(hosts)
    if not hosts:
        return
    others = session.scalars(
        sa.select(models.AggregateMetadata.value)
        .join(
            models.AggregateHost,
            models.AggregateHost.aggregate_id == models.AggregateMetadata.aggregate_id,
        )
        .where(
            models.AggregateMetadata.key == ZONE_KEY,
            models.AggregateMetadata.value != zone,
            models.AggregateMetadata.aggregate_id != aggregate.id,
            models.AggregateHost.host.in_(hosts),
        )
        .distinct()
    ).all()
    if others:
        raise exception.InvalidAggregateAction(
            what=what,
            aggregate_id=aggregate.id,
            reason=f"One or more hosts already in availability zone(s) {sorted(others)}",
        )


def _set_meta(session: Session, aggregate_id: int, changes: Mapping[str, str | None]) -> None:
    """Set (a string) or remove (None) each key."""
    for key, value in changes.items():
        session.execute(
            sa.delete(models.AggregateMetadata).where(
                models.AggregateMetadata.aggregate_id == aggregate_id,
                models.AggregateMetadata.key == key,
            )
        )
        if value is not None:
            session.add(models.AggregateMetadata(aggregate_id=aggregate_id, key=key, value=value))
    session.flush()


def _touch(session: Session, aggregate_id: int) -> None:
    session.execute(
        sa.update(models.Aggregate)
        .where(models.Aggregate.id == aggregate_id)
        .values(updated_at=models.utcnow())
    )


class AggregateApi(SessionSource):
    """Host aggregates, their hosts and metadata; the zones they make."""

    @retry_on_deadlock
    def aggregate_create(self, name: str, availability_zone: str | None = None) -> AggregateView:
        """Create an aggregate (in ``availability_zone``, when given).

        :raises AggregateNameExists: the name is taken; nothing written.
        """
        # NOTE: the same uuid in every run of this call: a run again after a
        # COMMIT whose answer was lost finds the aggregate it created.
        uuid = call_uuid("aggregate")
        try:
            with self._writer() as session:
                if commit_may_have_landed():
                    found = earlier_run_row(
                        session, models.Aggregate, {"uuid": uuid}, {"name": name}
                    )
                    if found is not None:
                        return _get(session, found.id)
                _check_name_free(session, name)
                row = models.Aggregate(uuid=uuid, name=name)
                session.add(row)
                session.flush()
                if availability_zone is not None:
                    _set_meta(session, row.id, {ZONE_KEY: availability_zone})
                created = _get(session, row.id)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            # NOTE: created by someone else between our check and our insert.
            raise exception.AggregateNameExists(aggregate_name=name) from None
        LOG.info("Created aggregate %s (%s) %s", created.id, name, created.uuid)
        return created

    def aggregate_list(self) -> list[AggregateView]:
        """Every aggregate, oldest first."""
        with self._reader() as session:
            return _views(
                session, session.scalars(sa.select(models.Aggregate).order_by(models.Aggregate.id))
            )

    def aggregate_get(self, aggregate_id: int) -> AggregateView:
        """One aggregate.

        :raises AggregateNotFound: no such aggregate.
        """
        with self._reader() as session:
            return _get(session, aggregate_id)

    @retry_on_deadlock
    def aggregate_update(
        self, aggregate_id: int, *, name: str | None = None, zone: Mapping[str, str | None]
    ) -> AggregateView:
        """Rename an aggregate and/or set its zone.

        :param zone: ``{}`` to leave the zone; ``{"availability_zone": z}`` to
            set it (None: to clear it).
        :raises AggregateNotFound: no such aggregate.
        :raises AggregateNameExists: the new name is another aggregate's.
        :raises InvalidAggregateAction: the zone would put one of its hosts
            in two zones, or change the zone of a host that holds servers.
        """
        try:
            with self._writer() as session:
                current = _get(session, aggregate_id)
                if name is not None:
                    _check_name_free(session, name, but=aggregate_id)
                if ZONE_KEY in zone:
                    self._check_zone_change(session, current, zone[ZONE_KEY], UPDATE)
                    _set_meta(session, aggregate_id, {ZONE_KEY: zone[ZONE_KEY]})
                values = {"updated_at": models.utcnow()}
                if name is not None:
                    values["name"] = name
                session.execute(
                    sa.update(models.Aggregate)
                    .where(models.Aggregate.id == aggregate_id)
                    .values(**values)
                )
                return _get(session, aggregate_id)
        except INTEGRITY_ERRORS:
            raise exception.AggregateNameExists(aggregate_name=name) from None

    def _check_zone_change(
        self, session: Session, current: AggregateView, zone: str | None, what: str
    ) -> None:
        _check_zone(session, current, zone, current.hosts, what)
        if zone == current.availability_zone or not current.hosts:
            return
        # NOTE: as Nova: a server's zone is where it was placed; moving its
        # host to another zone under it would break what it was promised.
        busy = session.scalars(
            sa.select(models.Server.uuid)
            .where(models.Server.host.in_(current.hosts), models.Server.deleted_at.is_(None))
            .limit(1)
        ).first()
        if busy is not None:
            raise exception.InvalidAggregateAction(
                what=what,
                aggregate_id=current.id,
                reason="One or more hosts contain instances in this zone",
            )

    @retry_on_deadlock
    def aggregate_delete(self, aggregate_id: int) -> AggregateView:
        """Delete an aggregate that has no host.

        :returns: the aggregate as it was.
        :raises AggregateNotFound: no such aggregate.
        :raises InvalidAggregateAction: it still has hosts.
        """
        with self._writer() as session:
            current = _get(session, aggregate_id)
            if current.hosts:
                raise exception.InvalidAggregateAction(
                    what=DELETE, aggregate_id=aggregate_id, reason="Host aggregate is not empty"
                )
            session.execute(
                sa.delete(models.AggregateMetadata).where(
                    models.AggregateMetadata.aggregate_id == aggregate_id
                )
            )
            session.execute(sa.delete(models.Aggregate).where(models.Aggregate.id == aggregate_id))
        LOG.info("Deleted aggregate %s (%s)", aggregate_id, current.name)
        return current

    def aggregate_check_add_host(self, aggregate_id: int, host: str) -> AggregateView:
        """What :meth:`aggregate_add_host` would refuse, checked without writing
        (the API asks before it changes Placement).

        :returns: the aggregate.
        :raises ComputeHostNotFound, AggregateNotFound, AggregateHostExists,
            InvalidAggregateAction: as :meth:`aggregate_add_host`.
        """
        with self._reader() as session:
            return self._check_add(session, aggregate_id, host)

    def _check_add(self, session: Session, aggregate_id: int, host: str) -> AggregateView:
        service = session.scalars(
            sa.select(models.Service.id).where(
                models.Service.host == host, models.Service.binary == COMPUTE_BINARY
            )
        ).first()
        if service is None:
            raise exception.ComputeHostNotFound(host=host)
        current = _get(session, aggregate_id)
        if host in current.hosts:
            raise exception.AggregateHostExists(aggregate_id=aggregate_id, host=host)
        _check_zone(session, current, current.availability_zone, [host], ADD)
        return current

    @retry_on_deadlock
    def aggregate_add_host(self, aggregate_id: int, host: str) -> AggregateView:
        """Add a compute host to an aggregate.

        :raises ComputeHostNotFound: no compute service on ``host``.
        :raises AggregateNotFound: no such aggregate.
        :raises AggregateHostExists: the host is in it already.
        :raises InvalidAggregateAction: the host is in another zone.
        """
        try:
            with self._writer() as session:
                if commit_may_have_landed():
                    current = _get(session, aggregate_id)
                    if host in current.hosts:
                        LOG.info("Host %s was added to aggregate %s earlier", host, aggregate_id)
                        return current
                self._check_add(session, aggregate_id, host)
                session.add(models.AggregateHost(aggregate_id=aggregate_id, host=host))
                _touch(session, aggregate_id)
                session.flush()
                return _get(session, aggregate_id)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            raise exception.AggregateHostExists(aggregate_id=aggregate_id, host=host) from None

    def aggregate_check_remove_host(self, aggregate_id: int, host: str) -> AggregateView:
        """What :meth:`aggregate_remove_host` would refuse, checked without writing.

        :raises AggregateNotFound, AggregateHostNotFound: as it.
        """
        with self._reader() as session:
            current = _get(session, aggregate_id)
            if host not in current.hosts:
                raise exception.AggregateHostNotFound(aggregate_id=aggregate_id, host=host)
            return current

    @writes
    def aggregate_remove_host(
        self, session: Session, aggregate_id: int, host: str
    ) -> AggregateView:
        """Remove a host from an aggregate.

        :raises AggregateNotFound: no such aggregate.
        :raises AggregateHostNotFound: the host is not in it.
        """
        current = _get(session, aggregate_id)
        done = session.execute(
            sa.delete(models.AggregateHost).where(
                models.AggregateHost.aggregate_id == aggregate_id,
                models.AggregateHost.host == host,
            )
        ).rowcount
        if not done:
            raise exception.AggregateHostNotFound(aggregate_id=current.id, host=host)
        _touch(session, aggregate_id)
        return _get(session, aggregate_id)

    @writes
    def aggregate_set_metadata(
        self, session: Session, aggregate_id: int, metadata: Mapping[str, str | None]
    ) -> AggregateView:
        """Set the given keys (a None value removes the key); others are kept.

        :raises AggregateNotFound: no such aggregate.
        :raises InvalidAggregateAction: a zone that would put one of its hosts
            in two zones, or move hosts holding servers to another zone.
        """
        current = _get(session, aggregate_id)
        if ZONE_KEY in metadata:
            self._check_zone_change(session, current, metadata[ZONE_KEY], UPDATE_META)
        _set_meta(session, aggregate_id, metadata)
        _touch(session, aggregate_id)
        return _get(session, aggregate_id)

    # -- what the policies and the zone API read -------------------------------

    def host_zones(self) -> dict[str, str]:
        """host -> zone, for every host in an aggregate with a zone (one query).

        A host not listed is in ``[DEFAULT] default_availability_zone``.
        """
        with self._reader() as session:
            return {
                host: zone
                for host, zone in session.execute(
                    sa.select(models.AggregateHost.host, models.AggregateMetadata.value)
                    .join(
                        models.AggregateMetadata,
                        models.AggregateMetadata.aggregate_id == models.AggregateHost.aggregate_id,
                    )
                    .where(models.AggregateMetadata.key == ZONE_KEY)
                )
            }

    def zone_aggregates(self, host: str | None = None) -> ZoneMap:
        """Every zone's aggregates, and ``host``'s zone when asked (one query).

        :param host: a host whose zone to tell (a moved server's source).
        """
        with self._reader() as session:
            return zone_map_in(session, host)

    def tenant_aggregates(self, project_id: str) -> list[str]:
        """The uuids of the aggregates whose ``filter_tenant_id*`` metadata
        names ``project_id`` (one query)."""
        with self._reader() as session:
            return list(
                session.scalars(
                    sa.select(models.Aggregate.uuid)
                    .join(
                        models.AggregateMetadata,
                        models.AggregateMetadata.aggregate_id == models.Aggregate.id,
                    )
                    .where(
                        models.AggregateMetadata.key.startswith(
                            TENANT_KEY_PREFIX, autoescape=True
                        ),
                        models.AggregateMetadata.value == project_id,
                    )
                    .distinct()
                    .order_by(models.Aggregate.uuid)
                )
            )
