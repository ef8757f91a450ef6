"""SQLAlchemy models of resize_sched, and the state constants they use.

Tables: ``flavors``, ``servers``, ``request_specs``, ``migrations`` and
``migration_journal``, ``server_journal``, ``leases``, and the services',
compute nodes' and instance actions' tables. Every timestamp is a timezone-aware UTC ``datetime``
(:class:`UTCDateTime`); every structured value is a portable ``JSON`` column,
so the same models work on SQLite, MariaDB/MySQL and PostgreSQL.

NOTE: the schema is owned by the Alembic migrations under ``migrations/``;
a change here needs a new migration, and the functional test comparing the
two (``autogenerate`` must find no difference) fails until it has one.
"""

import datetime
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column
from sqlalchemy.types import TypeEngine

# -- servers, as the Compute API shows them -----------------------------------

STATUS_BUILD = "BUILD"
STATUS_ACTIVE = "ACTIVE"
STATUS_RESIZE = "RESIZE"
STATUS_VERIFY_RESIZE = "VERIFY_RESIZE"
STATUS_REVERT_RESIZE = "REVERT_RESIZE"
STATUS_ERROR = "ERROR"
STATUS_DELETED = "DELETED"
STATUS_SHUTOFF = "SHUTOFF"
STATUS_MIGRATING = "MIGRATING"
STATUS_REBUILD = "REBUILD"
STATUS_SHELVED = "SHELVED"
STATUS_SHELVED_OFFLOADED = "SHELVED_OFFLOADED"
SERVER_STATUSES = (
    STATUS_BUILD,
    STATUS_ACTIVE,
    STATUS_RESIZE,
    STATUS_VERIFY_RESIZE,
    STATUS_REVERT_RESIZE,
    STATUS_ERROR,
    STATUS_DELETED,
    STATUS_SHUTOFF,
    STATUS_MIGRATING,
    STATUS_REBUILD,
    STATUS_SHELVED,
    STATUS_SHELVED_OFFLOADED,
)

VM_BUILDING = "building"
VM_ACTIVE = "active"
VM_RESIZED = "resized"
VM_ERROR = "error"
VM_DELETED = "deleted"
VM_STOPPED = "stopped"
VM_SHELVED = "shelved"
VM_SHELVED_OFFLOADED = "shelved_offloaded"
VM_STATES = (
    VM_BUILDING,
    VM_ACTIVE,
    VM_RESIZED,
    VM_ERROR,
    VM_DELETED,
    VM_STOPPED,
    VM_SHELVED,
    VM_SHELVED_OFFLOADED,
)

TASK_SCHEDULING = "scheduling"
TASK_RESIZE_PREP = "resize_prep"
#: A live migration's task state (the server's status is MIGRATING meanwhile).
TASK_MIGRATING = "migrating"
#: An evacuation's task state (the server's status is REBUILD meanwhile).
TASK_REBUILDING = "rebuilding"
TASK_RESIZE_MIGRATING = "resize_migrating"
TASK_RESIZE_MIGRATED = "resize_migrated"
TASK_RESIZE_FINISH = "resize_finish"
TASK_RESIZE_CONFIRMING = "resize_confirming"
TASK_RESIZE_REVERTING = "resize_reverting"
TASK_DELETING = "deleting"
TASK_POWERING_OFF = "powering-off"
TASK_POWERING_ON = "powering-on"
#: A shelve's, a shelve offload's and an unshelve's task states (Nova's); an
#: unshelve from offloaded is ``spawning`` once its host is claimed, as a build.
TASK_SHELVING = "shelving"
TASK_SHELVING_OFFLOADING = "shelving_offloading"
TASK_UNSHELVING = "unshelving"
TASK_SPAWNING = "spawning"

#: Nova's power states (``OS-EXT-STS:power_state``).
POWER_NOSTATE = 0
POWER_RUNNING = 1
POWER_SHUTDOWN = 4


def settled_state(power_state: int | None) -> tuple[str, str]:
    """(status, vm_state) of a server no task is acting on, by its power
    state: a stopped server stays SHUTOFF across a resize's end (confirm,
    revert, failure), as in Nova.

    :param power_state: the server's ``power_state`` (None: never set, running).
    """
    if power_state == POWER_SHUTDOWN:
        return STATUS_SHUTOFF, VM_STOPPED
    return STATUS_ACTIVE, VM_ACTIVE


# -- migrations -----------------------------------------------------------------

MIGRATION_TYPE_RESIZE = "resize"
MIGRATION_TYPE_MIGRATION = "migration"
MIGRATION_TYPE_LIVE = "live-migration"
MIGRATION_TYPE_EVACUATION = "evacuation"
MIGRATION_TYPES = (
    MIGRATION_TYPE_RESIZE,
    MIGRATION_TYPE_MIGRATION,
    MIGRATION_TYPE_LIVE,
    MIGRATION_TYPE_EVACUATION,
)

MIGRATION_PRE_MIGRATING = "pre-migrating"
MIGRATION_MIGRATING = "migrating"
MIGRATION_POST_MIGRATING = "post-migrating"
MIGRATION_FINISHED = "finished"
MIGRATION_CONFIRMING = "confirming"
MIGRATION_CONFIRMED = "confirmed"
MIGRATION_REVERTING = "reverting"
MIGRATION_REVERTED = "reverted"
MIGRATION_ERROR = "error"
#: A live migration's own statuses, Nova's: ``accepted`` until a destination
#: is claimed, ``preparing`` while the destination prepares, ``running`` while
#: the source hands the server over, then ``completed``; a rollback ends in
#: ``error``, an abort in ``cancelled``.
MIGRATION_ACCEPTED = "accepted"
MIGRATION_PREPARING = "preparing"
MIGRATION_RUNNING = "running"
MIGRATION_COMPLETED = "completed"
MIGRATION_CANCELLED = "cancelled"
LIVE_IN_FLIGHT_STATUSES = (MIGRATION_ACCEPTED, MIGRATION_PREPARING, MIGRATION_RUNNING)
#: An evacuation's, Nova's too: ``accepted``, ``pre-migrating`` once the
#: destination is claimed, ``done`` once the server runs there (the migration
#: still holds the source, whose host is down), ``completed`` once the
#: source's compute service is back and has removed its copy; ``failed``
#: when the rebuild on the destination failed.
MIGRATION_DONE = "done"
MIGRATION_FAILED = "failed"
MIGRATION_STATUSES = (
    MIGRATION_PRE_MIGRATING,
    MIGRATION_MIGRATING,
    MIGRATION_POST_MIGRATING,
    MIGRATION_FINISHED,
    MIGRATION_CONFIRMING,
    MIGRATION_CONFIRMED,
    MIGRATION_REVERTING,
    MIGRATION_REVERTED,
    MIGRATION_ERROR,
    *LIVE_IN_FLIGHT_STATUSES,
    MIGRATION_COMPLETED,
    MIGRATION_CANCELLED,
    MIGRATION_DONE,
    MIGRATION_FAILED,
)
#: A migration in one of these has ended; nothing more happens to it (except
#: an ``error`` one whose ``missing`` holdings the heal command still owes).
FINAL_STATUSES = (
    MIGRATION_CONFIRMED,
    MIGRATION_REVERTED,
    MIGRATION_ERROR,
    MIGRATION_COMPLETED,
    MIGRATION_CANCELLED,
    MIGRATION_FAILED,
)
#: Everything else: crash recovery must look at these.
IN_FLIGHT_STATUSES = tuple(s for s in MIGRATION_STATUSES if s not in FINAL_STATUSES)

#: ``Migration.error_kind``: why a migration is in ``error``.
ERROR_DEFERRED = "deferred"  # no host has room now; may fit later
ERROR_INFEASIBLE = "infeasible"  # no host can ever take it
ERROR_FAILED = "failed"  # anything else: see error_reason
ERROR_KINDS = (ERROR_DEFERRED, ERROR_INFEASIBLE, ERROR_FAILED)

# -- journal -------------------------------------------------------------------------

JOURNAL_INTENDED = "intended"
JOURNAL_APPLIED = "applied"
JOURNAL_ABANDONED = "abandoned"
JOURNAL_STATES = (JOURNAL_INTENDED, JOURNAL_APPLIED, JOURNAL_ABANDONED)

# -- column types ----------------------------------------------------------------------

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime.datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.datetime.now(datetime.UTC)


class UTCDateTime(sa.TypeDecorator[datetime.datetime]):
    """A ``datetime`` that is always timezone-aware UTC in Python.

    PostgreSQL stores it as ``timestamp with time zone``; SQLite and MySQL,
    which have no such type, store naive UTC (MySQL with microseconds) and
    get the UTC zone back on load. A naive value given in is taken as UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        value = value.astimezone(datetime.UTC)
        if dialect.name != "postgresql":
            value = value.replace(tzinfo=None)
        return value

    def process_result_value(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=datetime.UTC)
        return value.astimezone(datetime.UTC)


#: JSON whose Python ``None`` is SQL NULL (so ``IS NULL`` filters work).
NullableJSON = sa.JSON(none_as_null=True)


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: Mapped[datetime.datetime] = mapped_column(
        UTCDateTime(), nullable=False, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(
        UTCDateTime(), nullable=True, onupdate=utcnow
    )


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

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
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

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
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


class Migration(TimestampMixin, Base):
    """A resize (or cold migration) of one server.

    ``uuid`` is the Placement consumer that holds the source's allocations
    while the strategy in force (``claim_strategy``, fixed when the resize
    began) says so. ``holdings`` is the last known applied allocation state of
    both consumers; ``missing`` what a failed restore could not put back.
    """

    __tablename__ = "migrations"
    __table_args__ = (
        sa.Index(None, "server_uuid", "status"),
        sa.Index(None, "status"),
        # NOTE: the reaper's look-up of the migrations closed since its last pass.
        sa.Index(None, "updated_at"),
    )

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)
    server_uuid: Mapped[str] = mapped_column(
        sa.String(36), sa.ForeignKey("servers.uuid"), nullable=False
    )
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    migration_type: Mapped[str] = mapped_column(sa.String(16), nullable=False)
    source_host: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    source_node: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    source_rp_uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False)
    dest_host: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    dest_node: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    dest_rp_uuid: Mapped[str | None] = mapped_column(sa.String(36), nullable=True)
    old_flavor: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    new_flavor: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    old_resources: Mapped[dict[str, int]] = mapped_column(sa.JSON, nullable=False)
    new_resources: Mapped[dict[str, int]] = mapped_column(sa.JSON, nullable=False)
    claim_strategy: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    status: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    error_kind: Mapped[str | None] = mapped_column(sa.String(16), nullable=True)
    error_reason: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    alternates: Mapped[list[Any]] = mapped_column(sa.JSON, nullable=False, default=list)
    #: Provider uuids already tried (claim refused or prep_resize failed).
    tried: Mapped[list[Any]] = mapped_column(sa.JSON, nullable=False, default=list)
    holdings: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    missing: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: What the server held, provider by provider, when the resize began (a
    #: failure and a revert give back exactly this); None: ``old_resources``
    #: on ``source_rp_uuid``.
    old_allocations: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: The server's ``group_providers`` when the resize began; a failure and
    #: a revert give it back.
    old_group_providers: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)
    #: The conductor step running now (a token it took with a compare-and-swap),
    #: or None. Only the owner writes Placement for this migration or moves its
    #: status; a delete or crash recovery takes it away.
    task_owner: Mapped[str | None] = mapped_column(sa.String(36), nullable=True)
    #: False when the scheduler answered from the source alone
    #: (``prefer_same_host``): ``alternates`` are then not every other host,
    #: and a reschedule must ask about them. None (older rows): complete.
    alternates_complete: Mapped[bool | None] = mapped_column(sa.Boolean, nullable=True)
    #: The host an administrator named for a cold migration (``migrate`` with
    #: ``host``, microversion 2.56); the scheduler chooses among it alone.
    #: None: any host the scheduler finds.
    requested_host: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)

    def __repr__(self) -> str:
        return f"<Migration {self.uuid} of {self.server_uuid} {self.status}>"


class JournalMixin(TimestampMixin):
    """The columns every Placement write journal shares: an entry's place in
    its owner's sequence (``seq``), what it does (``phase``), the
    allocations read before the write and the ones it writes (``before``,
    ``target``), and how it ended (``state``, ``detail``).

    A table using it adds the owner's column (``sort_order=-1`` keeps it
    right after ``id``, where the migrations put it) and names that column
    in ``_owner_attr``; ``seq`` is unique per owner, and ``state`` indexed
    for recovery's look-up of the entries still ``intended``.
    """

    #: The column naming the row's owner.
    _owner_attr: ClassVar[str]

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Any, ...]:
        return (sa.UniqueConstraint(cls._owner_attr, "seq"), sa.Index(None, "state"))

    id: Mapped[int] = mapped_column(
        sa.Integer, primary_key=True, autoincrement=True, sort_order=-2
    )
    seq: Mapped[int] = mapped_column(sa.Integer, nullable=False)
    phase: Mapped[str] = mapped_column(sa.String(64), nullable=False)
    before: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    target: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False)
    state: Mapped[str] = mapped_column(sa.String(16), nullable=False, default=JOURNAL_INTENDED)
    detail: Mapped[str | None] = mapped_column(sa.Text, nullable=True)

    def __repr__(self) -> str:
        owner = getattr(self, self._owner_attr)
        return f"<{type(self).__name__} {owner}#{self.seq} {self.phase} {self.state}>"


class JournalEntry(JournalMixin, Base):
    """One intended Placement transition of a migration, in order (``seq``).

    Written ``intended`` before the Placement write, then marked ``applied``
    or ``abandoned``; crash recovery reads the ones still ``intended``.
    """

    __tablename__ = "migration_journal"
    _owner_attr = "migration_uuid"

    migration_uuid: Mapped[str] = mapped_column(
        sa.String(36), sa.ForeignKey("migrations.uuid"), nullable=False, sort_order=-1
    )


class ServerJournalEntry(JournalMixin, Base):
    """One intended Placement write to a server's own consumer outside any
    migration, in order (``seq``): a build's claim, the give-back of a claim
    that lost to a delete, a delete's release, a reap.

    As :class:`JournalEntry`: written ``intended`` before the write, then
    marked ``applied`` or ``abandoned``; recovery and the reaper settle the
    ones still ``intended`` by reading Placement. ``before`` and ``target``
    are the consumer's allocations (``{rp: {rc: n}}``).
    """

    __tablename__ = "server_journal"
    _owner_attr = "server_uuid"

    server_uuid: Mapped[str] = mapped_column(
        sa.String(36), sa.ForeignKey("servers.uuid"), nullable=False, sort_order=-1
    )


# -- leases -----------------------------------------------------------------------------

#: The lease of the conductors' sweep and reaper: one holder per deployment.
LEASE_SWEEP = "sweep"


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


# -- services and compute nodes --------------------------------------------------------


class Service(TimestampMixin, Base):
    """One running daemon (``binary`` on ``host``): its heartbeat and whether
    new work may go to it, as Nova's ``services`` table.

    A compute service's row is written by the conductor from the service's
    periodic report; ``updated_at``/``last_seen_up`` tell up from down.
    """

    __tablename__ = "services"
    __table_args__ = (sa.UniqueConstraint("host", "binary"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)
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

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    #: The resource provider's uuid.
    uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)
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


# -- instance actions ------------------------------------------------------------------


class InstanceAction(TimestampMixin, Base):
    """One user-visible operation on a server (``create``, ``resize``,
    ``confirmResize``, ``revertResize``, ``delete``), as Nova's
    ``os-instance-actions`` shows it."""

    __tablename__ = "instance_actions"
    __table_args__ = (
        sa.Index(None, "server_uuid", "request_id"),
        # NOTE: a server's newest action among some names (every step looks
        # it up) is the first row of this one read backwards; without it
        # the databases walk the primary key through other servers' actions
        # (see action_api._server_newest_first).
        sa.Index(None, "server_uuid", "id"),
    )

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    server_uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False)
    request_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    action: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    project_id: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    user_id: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    start_time: Mapped[datetime.datetime] = mapped_column(UTCDateTime(), nullable=False)
    finish_time: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: ``Error`` once any of its events failed, as Nova sets it.
    message: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)


class InstanceActionEvent(TimestampMixin, Base):
    """One step of an action (``conductor_migrate_server``,
    ``compute_prep_resize``...), its result and, on failure, why."""

    __tablename__ = "instance_action_events"
    __table_args__ = (sa.Index(None, "action_id"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    action_id: Mapped[int] = mapped_column(
        sa.Integer, sa.ForeignKey("instance_actions.id", ondelete="CASCADE"), nullable=False
    )
    event: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    start_time: Mapped[datetime.datetime] = mapped_column(UTCDateTime(), nullable=False)
    finish_time: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: ``Success`` or ``Error``; None while the step runs.
    result: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    traceback: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    host: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    details: Mapped[str | None] = mapped_column(sa.Text, nullable=True)


# -- scheduling policies: server groups, aggregates, quotas, key pairs -------------------


class ServerGroup(TimestampMixin, Base):
    """A server group (Nova's ``instance_groups`` with its one policy).

    ``policy`` is one of ``affinity``, ``anti-affinity``, ``soft-affinity``,
    ``soft-anti-affinity``; ``rules`` holds ``max_server_per_host`` (2.64)
    for ``anti-affinity``. Deleted rows are removed, as in Nova's API
    database.
    """

    __tablename__ = "server_groups"
    __table_args__ = (sa.Index(None, "project_id"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    policy: Mapped[str] = mapped_column(sa.String(32), nullable=False)
    rules: Mapped[dict[str, Any]] = mapped_column(sa.JSON, nullable=False, default=dict)

    def __repr__(self) -> str:
        return f"<ServerGroup {self.uuid} {self.policy}>"


class ServerGroupMember(TimestampMixin, Base):
    """One server in a group; a server is in one group at most."""

    __tablename__ = "server_group_members"
    __table_args__ = (sa.Index(None, "group_id"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    group_id: Mapped[int] = mapped_column(
        sa.Integer, sa.ForeignKey("server_groups.id", ondelete="CASCADE"), nullable=False
    )
    server_uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)


class Aggregate(TimestampMixin, Base):
    """A host aggregate (Nova's ``aggregates``); its availability zone is
    the metadata key ``availability_zone``, as in Nova. ``uuid`` is the
    Placement aggregate its hosts' root providers are members of."""

    __tablename__ = "aggregates"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False, unique=True)

    def __repr__(self) -> str:
        return f"<Aggregate {self.id} {self.name!r}>"


class AggregateHost(TimestampMixin, Base):
    """A host (a compute service's host name) in an aggregate."""

    __tablename__ = "aggregate_hosts"
    __table_args__ = (sa.UniqueConstraint("host", "aggregate_id"), sa.Index(None, "host"))

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    aggregate_id: Mapped[int] = mapped_column(
        sa.Integer, sa.ForeignKey("aggregates.id", ondelete="CASCADE"), nullable=False
    )
    host: Mapped[str] = mapped_column(sa.String(255), nullable=False)


class AggregateMetadata(TimestampMixin, Base):
    """One key/value pair of an aggregate's metadata."""

    __tablename__ = "aggregate_metadata"
    __table_args__ = (sa.UniqueConstraint("aggregate_id", "key"), sa.Index(None, "key"))

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    aggregate_id: Mapped[int] = mapped_column(
        sa.Integer, sa.ForeignKey("aggregates.id", ondelete="CASCADE"), nullable=False
    )
    key: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    value: Mapped[str] = mapped_column(sa.String(255), nullable=False)


class Quota(TimestampMixin, Base):
    """A project's (or, with ``user_id``, a user's in a project) limit on
    one resource (``instances``, ``cores``, ``ram``, ``server_groups``...);
    -1 is unlimited."""

    __tablename__ = "quotas"
    __table_args__ = (sa.UniqueConstraint("project_id", "user_id", "resource"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    #: None: the project's own limit; else a user's within the project.
    user_id: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    resource: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hard_limit: Mapped[int] = mapped_column(sa.Integer, nullable=False)


class QuotaClass(TimestampMixin, Base):
    """A quota class's limit on one resource; the class ``default`` gives
    every project's default (Nova's ``os-quota-class-sets``)."""

    __tablename__ = "quota_classes"
    __table_args__ = (sa.UniqueConstraint("class_name", "resource"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    class_name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    resource: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    hard_limit: Mapped[int] = mapped_column(sa.Integer, nullable=False)


class KeyPair(TimestampMixin, Base):
    """A user's SSH (or x509) public key, by name (``os-keypairs``)."""

    __tablename__ = "key_pairs"
    __table_args__ = (sa.UniqueConstraint("user_id", "name"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    user_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    fingerprint: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    public_key: Mapped[str] = mapped_column(sa.Text, nullable=False)
    type: Mapped[str] = mapped_column(sa.String(16), nullable=False, default="ssh")


class FlavorProject(TimestampMixin, Base):
    """A project given access to a private flavor (``os-flavor-access``)."""

    __tablename__ = "flavor_projects"
    __table_args__ = (sa.UniqueConstraint("flavor_id", "project_id"),)

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=True)
    flavor_id: Mapped[int] = mapped_column(
        sa.Integer, sa.ForeignKey("flavors.id", ondelete="CASCADE"), nullable=False
    )
    project_id: Mapped[str] = mapped_column(sa.String(255), nullable=False)
