"""Data API for the server journal (a mixin of ``Database``).

A resize journals each Placement write on its migration
(:mod:`resize_sched.db.migration_journal_api`); a server's own consumer, written
outside any migration, is journaled here the same way: a build's claim, the
give-back of a claim that lost to a delete, a delete's release, a reap.
Before each write an ``intended`` entry is recorded under the server's row
lock, where the write is checked to be still wanted; after it the entry is
marked ``applied`` (a build's claim: in the transaction that records the
host) or ``abandoned``. An entry still ``intended`` is settled by reading
Placement (:meth:`resize_sched.placement.executor.TransitionExecutor.settle_server`).

The reaper's look-ups live here too: the consumers we deleted or closed
since its last pass (:meth:`ServerJournalApi.reap_recent`), and which of a
list of consumers found on our providers are deleted servers or closed
migrations of ours (:meth:`ServerJournalApi.reap_candidates`).
"""

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.db import journal as journals
from resize_sched.db import models
from resize_sched.db.cas import check_values, describe, describe_expected, match, update_where
from resize_sched.db.retry import commit_may_have_landed, retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource, stamp_after

LOG = logging.getLogger(__name__)

# Consumers looked up per query by the reaper (bounded IN lists).
_LOOKUP_CHUNK = 500


def _matches(value: Any, expected: Any) -> bool:
    """Python's side of :func:`resize_sched.db.session.match`."""
    if isinstance(expected, list | tuple | set | frozenset):
        return value in expected
    return value == expected


def _closed_since(
    model: Any, closed: Any, closed_at: Any, journal_owner: Any, since: datetime.datetime
) -> sa.Select[Any]:
    """The rows of ``model`` (servers, migrations) that are ``closed`` and
    were closed (``closed_at``) after ``since``, or whose journal (its
    owner column ``journal_owner``) still has an ``intended`` entry."""
    journal = journal_owner.class_
    pending = sa.select(journal_owner).where(journal.state == models.JOURNAL_INTENDED)
    return sa.select(model).where(closed, sa.or_(closed_at > since, model.uuid.in_(pending)))


class ServerJournalApi(SessionSource):
    """The server journal, and the reaper's look-up."""

    @retry_on_deadlock
    def server_journal_intend(
        self,
        server_uuid: str,
        *,
        phase: str,
        before: Mapping[str, Any],
        target: Mapping[str, Any],
        expected: Mapping[str, Any] | None = None,
        releasing: bool = False,
    ) -> models.ServerJournalEntry:
        """Record a write to the server's consumer about to be sent to Placement.

        Under the server's row lock it also checks the write is still
        wanted: the server is as ``expected`` and, unless the write only
        takes away (``releasing``), live with no delete asked for. So a
        delete recorded first wins over every later claim: nothing a delete
        emptied is re-created by a step that journals after it.

        :param phase: ``claim``, ``give back``, ``release``, ``reap``...
        :param before: the allocations the write starts from.
        :param target: the allocations it leads to.
        :param expected: server column -> value it must have (``None``:
            NULL; a list: any of its members).
        :param releasing: the write only takes away: it may go ahead for a
            deleted server, or one being deleted.
        :returns: the entry, ``intended``, numbered after the server's last.
        :raises resize_sched.exception.ServerNotFound: no such server, or
            deleted (unless ``releasing``).
        :raises resize_sched.exception.ServerStateConflict: not as
            ``expected``, or being deleted (unless ``releasing``).
        :raises resize_sched.exception.Invalid: a bad phase, before or target.
        """
        journals.check_intent(phase, before, target)
        expected = dict(expected or {})
        check_values(models.Server, expected, what="server", compared=True)
        for attempt in range(1, journals.SEQ_ATTEMPTS + 1):
            try:
                with self._writer() as session:
                    return self._server_journal_append(
                        session, server_uuid, phase, before, target, expected, releasing
                    )
            except INTEGRITY_ERRORS:
                # NOTE: a concurrent writer took the same seq; count again.
                LOG.debug("Journal seq race on server %s (attempt %d)", server_uuid, attempt)
        raise exception.Conflict(reason=f"could not append to the journal of server {server_uuid}")

    @staticmethod
    def _server_journal_append(
        session: Any,
        server_uuid: str,
        phase: str,
        before: Mapping[str, Any],
        target: Mapping[str, Any],
        expected: Mapping[str, Any],
        releasing: bool,
    ) -> models.ServerJournalEntry:
        # NOTE: the row lock serialises appenders to one server's journal and
        # orders the check against a delete's compare-and-swap; the last seq
        # is read after it, in a plain statement (see migration_journal_api's note on
        # MySQL's gap locks). On Galera the lock holds on its own node only:
        # a delete (or any compare-and-swap of the server) committed on
        # another node is not held back, and only writes certify against each
        # other. So the server's row is written too (its updated_at moved on,
        # below): of this append and a concurrent change of the server, one
        # fails certification and runs again whole, and sees the other. Two
        # appends on two nodes collide on the same row, and on the
        # (server_uuid, seq) key as well.
        server = session.execute(
            sa.select(models.Server).where(models.Server.uuid == server_uuid).with_for_update()
        ).scalar_one_or_none()
        if server is None or (server.deleted_at is not None and not releasing):
            raise exception.ServerNotFound(server_id=server_uuid)
        deleting = server.task_state == models.TASK_DELETING
        if (deleting and not releasing) or not all(
            _matches(getattr(server, k), v) for k, v in expected.items()
        ):
            raise exception.ServerStateConflict(
                server_id=server_uuid,
                actual=describe(server, ["status", "task_state", *expected]),
                expected=describe_expected(expected) or "no delete asked for",
                operation=f"journal its {phase}",
            )
        journal = models.ServerJournalEntry
        if commit_may_have_landed():
            # NOTE: an earlier run of this call may have committed this very
            # entry (its connection was lost while committing): not twice.
            mine = journals.last_intended_in(session, journal, server_uuid, phase, before, target)
            if mine is not None:
                return mine
        session.execute(
            sa.update(models.Server)
            .where(models.Server.uuid == server_uuid)
            .values(updated_at=stamp_after(server.updated_at))
            .execution_options(synchronize_session=False)
        )
        last = session.scalar(
            sa.select(sa.func.max(journal.seq)).where(journal.server_uuid == server_uuid)
        )
        entry = journal(
            server_uuid=server_uuid,
            seq=(last or 0) + 1,
            phase=phase,
            before=dict(before),
            target=dict(target),
            state=models.JOURNAL_INTENDED,
            detail=None,
        )
        session.add(entry)
        session.flush()
        return entry

    @retry_on_deadlock
    def server_journal_mark(
        self, entry_id: int, state: str, detail: str | None = None
    ) -> models.ServerJournalEntry | None:
        """Mark an intended entry ``applied`` or ``abandoned``.

        :returns: the entry as updated; None when it was no longer intended
            (settled meanwhile by someone reading the same outcome).
        :raises resize_sched.exception.Invalid: another target state.
        """
        journals.check_mark(state)
        journal = models.ServerJournalEntry
        with self._writer() as session:
            result = session.execute(
                sa.update(journal)
                .where(journal.id == entry_id, journal.state == models.JOURNAL_INTENDED)
                .values(state=state, detail=detail, updated_at=models.utcnow())
                .execution_options(synchronize_session=False)
            )
            if not result.rowcount:
                return None
            return session.get(journal, entry_id, populate_existing=True)

    def server_journal_list(self, server_uuid: str) -> list[models.ServerJournalEntry]:
        """A server's journal, in order (empty for an unknown server)."""
        with self._reader() as session:
            return journals.entries_in(session, models.ServerJournalEntry, server_uuid)

    def server_journal_pending(self) -> list[models.ServerJournalEntry]:
        """Every server journal entry still ``intended``, oldest first."""
        with self._reader() as session:
            return journals.pending_in(session, models.ServerJournalEntry)

    @retry_on_deadlock
    def server_advance(
        self,
        uuid: str,
        /,
        *,
        expected: Mapping[str, Any],
        operation: str,
        applied: Iterable[int] = (),
        group_check: bool = False,
        **values: Any,
    ) -> models.Server:
        """Move a build on after its write landed, and mark the write's entries.

        One transaction: the server changes only while it is live, no delete
        has been asked for and it is as ``expected``; the ``applied`` entries
        are marked in the same commit. When the server moved on, nothing is
        written and the entries stay ``intended`` for the caller (or
        recovery) to settle.

        :param group_check: run the late check of the server's group
            (:meth:`~resize_sched.db.group_api.GroupApi.group_check_host_in`)
            on the ``host`` being recorded, in this transaction.
        :returns: the server as updated.
        :raises resize_sched.exception.ServerNotFound: no such live server.
        :raises resize_sched.exception.ServerStateConflict: not as expected,
            or a delete was asked for.
        :raises resize_sched.exception.GroupPolicyViolation: the late check
            refused the host; nothing written.
        """
        expected = dict(expected)
        check_values(models.Server, values, what="server")
        check_values(models.Server, expected, what="server", compared=True)
        conditions = [
            models.Server.deleted_at.is_(None),
            sa.or_(
                models.Server.task_state.is_(None),
                models.Server.task_state != models.TASK_DELETING,
            ),
            *(match(getattr(models.Server, k), v) for k, v in expected.items()),
        ]
        ids = list(applied)
        with self._writer() as session:
            if group_check and values.get("host"):
                self.group_check_host_in(session, uuid, values["host"])  # type: ignore[attr-defined]
            changed, server = update_where(session, models.Server, uuid, conditions, values)
            if changed:
                journals.mark_applied_in(session, models.ServerJournalEntry, ids)
        if server is None or (changed == 0 and server.deleted_at is not None):
            raise exception.ServerNotFound(server_id=uuid)
        if changed == 0:
            raise exception.ServerStateConflict(
                server_id=uuid,
                actual=describe(server, ["task_state", *expected]),
                expected=describe_expected(expected) + ", no delete asked for",
                operation=operation,
            )
        return server

    def reap_recent(
        self, since: datetime.datetime
    ) -> tuple[list[models.Server], list[models.Migration]]:
        """The consumers the reaper's pass looks at.

        :param since: the end of the reaper's last pass.
        :returns: the servers deleted after ``since``, and the migrations in a
            final status (``confirmed``, ``reverted``, ``error``) last changed
            after it; with them, whatever the time, every deleted server and
            closed migration that has a journal entry still ``intended`` (a
            write whose outcome is unknown).
        """
        server, migration = models.Server, models.Migration
        with self._reader() as session:
            servers = session.scalars(
                _closed_since(
                    server,
                    server.deleted_at.is_not(None),
                    server.deleted_at,
                    models.ServerJournalEntry.server_uuid,
                    since,
                )
            ).all()
            migrations = session.scalars(
                _closed_since(
                    migration,
                    migration.status.in_(models.FINAL_STATUSES),
                    migration.updated_at,
                    models.JournalEntry.migration_uuid,
                    since,
                )
            ).all()
        return list(servers), list(migrations)

    def reap_candidates(
        self, consumers: Iterable[str]
    ) -> tuple[list[models.Server], list[models.Migration]]:
        """Which of ``consumers`` are deleted servers or closed migrations of ours.

        :returns: the deleted servers and the migrations in a final status
            (``confirmed``, ``reverted``, ``error``) among them.
        """
        wanted = sorted(set(consumers))
        servers: list[models.Server] = []
        migrations: list[models.Migration] = []
        with self._reader() as session:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start : start + _LOOKUP_CHUNK]
                servers += session.scalars(
                    sa.select(models.Server).where(
                        models.Server.uuid.in_(chunk), models.Server.deleted_at.is_not(None)
                    )
                )
                migrations += session.scalars(
                    sa.select(models.Migration).where(
                        models.Migration.uuid.in_(chunk),
                        models.Migration.status.in_(models.FINAL_STATUSES),
                    )
                )
        return servers, migrations
