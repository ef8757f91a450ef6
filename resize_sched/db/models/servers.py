"""The tables of servers and what they are built from: flavors, servers, request specs."""

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resize_sched.db.models.base import Base, NullableJSON, TimestampMixin, UTCDateTime, serial_id


class Flavor(TimestampMixin, Base):
    """A flavor: what a server asks of a host.

    ``deleted`` follows Nova's soft-delete convention: 0 while the flavor is
    live, the row's own ``id`` once deleted, so a deleted flavor does not
    block a new one with the same name or flavorid (unique per ``deleted``).
    Test it for truth: ``if flavor.deleted``.
    """

    __tablename__ = "flavors"
    __table_args__ = (
        sa.UniqueConstraint("name", "deleted"),
        sa.UniqueConstraint("flavorid", "deleted"),
    )

    id: Mapped[int] = serial_id()
    flavorid: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    vcpus: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    memory_mb: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    root_gb: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    ephemeral_gb: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    swap: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    extra_specs: Mapped[dict[str, str]] = mapped_column(sa.JSON, nullable=False, default=dict)
    is_public: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=True)
    deleted: Mapped[int] = mapped_column(sa.Integer, nullable=False, default=0)
    deleted_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)

    def to_snapshot(self) -> dict[str, Any]:
        """The flavor as a server or migration records it.

        :returns: the mapping :func:`resize_sched.resources.flavor_request`
            accepts, with the API-visible flavorid as ``id``.
        """
        return {
            "id": self.flavorid,
            "name": self.name,
            "vcpus": self.vcpus,
            "memory_mb": self.memory_mb,
            "root_gb": self.root_gb,
            "ephemeral_gb": self.ephemeral_gb,
            "swap": self.swap,
            "extra_specs": dict(self.extra_specs or {}),
        }

    def __repr__(self) -> str:
        return f"<Flavor {self.flavorid} {self.name!r}>"


class Server(TimestampMixin, Base):
    """A server, with a snapshot of the flavor it runs with."""

    __tablename__ = "servers"
    __table_args__ = (
        sa.Index(None, "project_id"),
        sa.Index(None, "host"),
        sa.Index(None, "deleted_at"),
        sa.Index(None, "reservation_id"),
    )

    uuid: Mapped[str] = mapped_column(sa.String(36), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    flavor: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    host: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    node: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    rp_uuid: Mapped[str | None] = mapped_column(sa.String(36), nullable=True)
    vm_state: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    task_state: Mapped[str | None] = mapped_column(sa.String(64), nullable=True)
    status: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    fault_message: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    fault_code: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    fault_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: Placement does not hold what the server runs with (a failed restore);
    #: the heal command re-claims it.
    needs_heal: Mapped[bool] = mapped_column(sa.Boolean, nullable=False, default=False)
    #: The server consumer's Placement generation after our last write (None:
    #: no allocation), so the next write needs no read first.
    placement_generation: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    deleted_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: The image the server was created from (``imageRef``), if any.
    image_ref: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    #: When the server first became ACTIVE (Nova's ``launched_at``); None
    #: while it never ran. Its ``deleted_at`` is Nova's ``terminated_at``.
    launched_at: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: What our last write gave the server in Placement, provider by provider
    #: (a child's vGPU, a sharing provider's disk); None: its whole flavor on
    #: ``rp_uuid``, as on a flat host.
    allocations: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: Placement's ``mappings`` for our last claim: request group suffix
    #: (``""`` unnumbered) -> provider uuids; None when the flavor has no
    #: numbered group.
    group_providers: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: The addresses the owner says the server is reached at (Nova's
    #: ``accessIPv4``/``accessIPv6``), None when not given.
    access_ip_v4: Mapped[str | None] = mapped_column(sa.String(39), nullable=True)
    access_ip_v6: Mapped[str | None] = mapped_column(sa.String(39), nullable=True)
    #: The owner's key/value pairs (Nova's server ``metadata``); None: none.
    metadata_items: Mapped[dict[str, str] | None] = mapped_column(NullableJSON, nullable=True)
    #: Nova's ``description`` (microversion 2.19), None when not given.
    description: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    #: Nova's power state, as the compute host last set it (None on rows
    #: from before it was kept: running when active or resized).
    power_state: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)
    #: The availability zone the server was asked into (None: none asked;
    #: it is then in whatever zone its host is).
    availability_zone: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    #: The key pair named at create (Nova's ``key_name``), None when none.
    key_name: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    #: The reservation of the create that made it (``r-`` and eight
    #: characters, shared by every server of one multiple create); None on
    #: rows from before it was kept.
    reservation_id: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    #: Its place (from 0) among the servers of that create; None: 0.
    launch_index: Mapped[int | None] = mapped_column(sa.Integer, nullable=True)

    def __repr__(self) -> str:
        return f"<Server {self.uuid} {self.status}/{self.vm_state}/{self.task_state}>"


class RequestSpec(TimestampMixin, Base):
    """What a server asks the scheduler for. Never per-attempt state."""

    __tablename__ = "request_specs"

    id: Mapped[int] = serial_id()
    server_uuid: Mapped[str] = mapped_column(
        sa.String(36), sa.ForeignKey("servers.uuid"), nullable=False, unique=True
    )
    resources: Mapped[dict[str, int]] = mapped_column(sa.JSON, nullable=False)
    required_traits: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False, default=list)
    ignore_hosts: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False, default=list)
    force_hosts: Mapped[list[str]] = mapped_column(sa.JSON, nullable=False, default=list)
    scheduler_hints: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)
    #: The availability zone asked at create (or kept by the last move), as
    #: Nova's ``RequestSpec.availability_zone``; None: any.
    availability_zone: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)

    def __repr__(self) -> str:
        return f"<RequestSpec {self.server_uuid}>"
