"""The tables of moves (resizes, migrations, evacuations) and their Placement journals.

``migrations`` holds one row per move; ``migration_journal`` and
``server_journal`` record, in order, each Placement write made for a
migration or for a server outside any migration (:class:`JournalMixin` is
what both share).
"""

from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, declared_attr, mapped_column

from resize_sched.db.models.base import Base, NullableJSON, TimestampMixin, serial_id, unique_uuid
from resize_sched.db.states import JOURNAL_INTENDED


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

    id: Mapped[int] = serial_id()
    uuid: Mapped[str] = unique_uuid()
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
    #: A confirm or revert Placement refused, while the server waits in
    #: VERIFY_RESIZE again: ``decision``, the refused ``provider`` and its
    #: ``generation`` then. The conductor's sweep begins the decision again
    #: once that generation moves (see :mod:`resize_sched.conductor.retry`);
    #: beginning any decision clears it.
    refused_decision: Mapped[dict[str, Any] | None] = mapped_column(NullableJSON, nullable=True)

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

    id: Mapped[int] = serial_id(sort_order=-2)
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
