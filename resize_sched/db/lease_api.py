"""Data API for the conductors' leases (a mixin of ``Database``).

A lease (:class:`resize_sched.db.models.Lease`) makes one conductor of the
deployment the only one to run a duty (the sweep and its reaper). Taking it
is one compare-and-swap, the same statement on SQLite, MariaDB and
PostgreSQL: ``UPDATE leases SET holder=me, expires_at=now+duration WHERE
name=... AND (holder=me OR holder IS NULL OR expires_at <= now)``. Of two
conductors racing for an expired lease the database serialises the two
updates on the row, and the second finds the first's holder and expiry, so
exactly one changes it. The row is created by the first taker (an
``INSERT`` that a racing taker's duplicate key turns into "not taken").

Times are the conductors' own clocks (UTC): hosts must agree on the time
to well within a lease's duration, as the services' heartbeats already
need.
"""

import datetime
from typing import Any

import sqlalchemy as sa

from resize_sched.db import models
from resize_sched.db.retry import retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource

_MARKS = frozenset({"reaped_until", "scanned_at"})


class LeaseApi(SessionSource):
    """Take, renew, release and record the progress of a lease."""

    @retry_on_deadlock
    def lease_take(self, name: str, holder: str, duration: float) -> models.Lease | None:
        """Take the lease ``name`` for ``duration`` seconds, or renew it.

        :param holder: who takes it (a conductor's ``[DEFAULT] host``).
        :returns: the lease as held now, or None when someone else holds it
            and it has not expired.
        """
        now = models.utcnow()
        until = now + datetime.timedelta(seconds=duration)
        table = models.Lease.__table__
        with self._writer() as session:
            result = session.execute(
                sa.update(table)
                .where(
                    table.c.name == name,
                    sa.or_(
                        table.c.holder == holder,
                        table.c.holder.is_(None),
                        table.c.expires_at.is_(None),
                        table.c.expires_at <= now,
                    ),
                )
                .values(holder=holder, expires_at=until)
            )
            row = session.get(models.Lease, name, populate_existing=True)
            if result.rowcount:
                return row
            if row is not None:
                return None
        try:
            with self._writer() as session:
                session.add(models.Lease(name=name, holder=holder, expires_at=until))
        except INTEGRITY_ERRORS:
            return None  # another taker created it first
        return self.lease_get(name)

    @retry_on_deadlock
    def lease_release(self, name: str, holder: str) -> bool:
        """Give the lease up at once (a conductor stopping), if ``holder`` holds it.

        :returns: whether it was held by ``holder``.
        """
        table = models.Lease.__table__
        with self._writer() as session:
            result = session.execute(
                sa.update(table)
                .where(table.c.name == name, table.c.holder == holder)
                .values(holder=None, expires_at=None)
            )
        return bool(result.rowcount)

    @retry_on_deadlock
    def lease_record(self, name: str, holder: str, **marks: Any) -> bool:
        """Record how far the duty got (``reaped_until``, ``scanned_at``), only
        while ``holder`` still holds the lease.

        :returns: whether it was recorded (False: someone else holds it now).
        :raises ValueError: an unknown mark.
        """
        unknown = set(marks) - _MARKS
        if unknown:
            raise ValueError(f"unknown lease marks: {sorted(unknown)}")
        table = models.Lease.__table__
        with self._writer() as session:
            result = session.execute(
                sa.update(table)
                .where(table.c.name == name, table.c.holder == holder)
                .values(**marks)
            )
        return bool(result.rowcount)

    def lease_get(self, name: str) -> models.Lease | None:
        """The lease ``name`` as it is now; None before anyone took it."""
        with self._reader() as session:
            return session.get(models.Lease, name)
