"""The tables of instance actions and their events (``os-instance-actions``)."""

import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from resize_sched.db.models.base import (
    Base,
    TimestampMixin,
    UTCDateTime,
    owned_by,
    serial_id,
    unique_uuid,
)


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
        # (see action_queries.server_newest_first).
        sa.Index(None, "server_uuid", "id"),
    )

    id: Mapped[int] = serial_id()
    #: Made from the server, the request and the action's name
    #: (:func:`resize_sched.db.action_queries.action_uuid`): a request's
    #: action is recorded once, however often the write runs.
    uuid: Mapped[str] = unique_uuid()
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

    id: Mapped[int] = serial_id()
    #: Made by the data API call that records it, the same in every run of
    #: the call (:func:`resize_sched.db.retry.call_uuid`).
    uuid: Mapped[str] = unique_uuid()
    action_id: Mapped[int] = owned_by("instance_actions.id")
    event: Mapped[str] = mapped_column(sa.String(255), nullable=False)
    start_time: Mapped[datetime.datetime] = mapped_column(UTCDateTime(), nullable=False)
    finish_time: Mapped[datetime.datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    #: ``Success`` or ``Error``; None while the step runs.
    result: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    traceback: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
    host: Mapped[str | None] = mapped_column(sa.String(255), nullable=True)
    details: Mapped[str | None] = mapped_column(sa.Text, nullable=True)
