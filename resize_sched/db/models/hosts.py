"""The tables of the deployment's daemons: services, compute nodes, the conductors' leases."""

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resize_sched.db.models.base import (
    Base,
    NullableJSON,
    TimestampMixin,
    UTCDateTime,
    serial_id,
    unique_uuid,
)


class Lease(TimestampMixin, Base):
    """A duty only one conductor of the deployment runs at a time, and who runs it.

    ``holder`` (a conductor's ``[DEFAULT] host``) holds it until
    ``expires_at``; the holder renews it, anyone takes it over once it has
    expired (both a compare-and-swap on these two columns). The other
    columns are how far the duty got, so that whoever holds it next goes on
    from there: for the sweep, the reaper's last pass (``reaped_until``:
    every consumer closed before it has been looked at) and its last scan of
    every provider (``scanned_at``).
    """

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    holder: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    expires_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    reaped_until: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    scanned_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    def __repr__(self) -> str:
        return f"<Lease {self.name} held by {self.holder} until {self.expires_at}>"


class Service(TimestampMixin, Base):
    """One running daemon (``binary`` on ``host``): its heartbeat and whether
    new work may go to it, as Nova's ``services`` table.

    A compute service's row is written by the conductor from the service's
    periodic report; ``updated_at``/``last_seen_up`` tell up from down.
    """

    __tablename__ = "services"
    __table_args__ = (sa.UniqueConstraint("host", "binary"),)

    id: Mapped[int] = serial_id()
    uuid: Mapped[str] = unique_uuid()
    host: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    binary: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    topic: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    disabled: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    disabled_reason: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    forced_down: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    report_count: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    last_seen_up: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: The RPC API version the service last reported it speaks.
    version: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)

    def __repr__(self) -> str:
        return f"<Service {self.binary}@{self.host}>"


class ComputeNode(TimestampMixin, Base):
    """One compute host's resource provider and the inventory it last set.

    What the scheduler needs to judge "could this ever fit here, empty"
    without asking Placement for every provider's inventory, and to name a
    provider's host without listing providers.
    """

    __tablename__ = "compute_nodes"
    __table_args__ = (sa.Index(None, "host"),)

    id: Mapped[int] = serial_id()
    #: The resource provider's uuid.
    uuid: Mapped[str] = unique_uuid()
    host: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hypervisor_hostname: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hypervisor_type: Mapped[str] = mapped_column(sa.String(255), nullable=False, default="fake")
    #: resource class -> Placement inventory record (total, reserved,
    #: min_unit, max_unit, step_size, allocation_ratio).
    inventory: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)
    #: The provider generation that inventory was written at.
    provider_generation: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    #: The child providers the host's service owns and reported: uuid ->
    #: ``{"name", "inventory", "traits"}``; None on a flat host. Not in
    #: ``inventory``, which is the root's alone.
    children: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: When the node's service last reported it.
    reported_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: Builds that failed on this node in a row (a success resets it), for
    #: the BuildFailureWeigher.
    failed_builds: Mapped[int] = mapped_column(
        sa.Integer, nullable=False, default=0, server_default="0"
    )

    def __repr__(self) -> str:
        return f"<ComputeNode {self.hypervisor_hostname} {self.uuid}>"
