"""Data API for the migration journal and holdings (a mixin of ``Database``).

The journal is what crash recovery reads: before each Placement write the
executor records the intended transition (:meth:`MigrationJournalApi.journal_intend`),
then marks it ``applied`` or ``abandoned`` (:meth:`MigrationJournalApi.journal_mark`;
within a conductor step, an ``applied`` waits for the step's next write: see
:mod:`resize_sched.db.steps`). The migration's known holdings are recorded in
the transaction that journals the write leading to them.
Holdings are JSON shaped ``{"server": {rp: {rc: n}}, "migration": {rp: {rc: n}},
"generations": {"server": int | None, "migration": int | None}}``.
"""

import json
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.db import journal as journals
from resize_sched.db import models, steps
from resize_sched.db.cas import cas_update
from resize_sched.db.migration_checks import server_of_migration_ok
from resize_sched.db.migration_journal_rows import (
    Append,
    copy_migration,
    journal_lock_query,
    journal_statements,
    known_seq,
    read_migration,
    unchanged_since,
    whole_row,
)
from resize_sched.db.retry import commit_may_have_landed, retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource, stamp_after
from resize_sched.db.steps import StepRun

LOG = logging.getLogger(__name__)


class MigrationJournalApi(SessionSource):
    """The migration journal and the holdings recorded with it."""

    @retry_on_deadlock
    def journal_intend(
        self,
        migration_uuid: str,
        *,
        phase: str,
        before: dict[str, Any],
        target: dict[str, Any],
        owner: str | None = None,
        releasing: bool = False,
        holdings: Mapping[str, Any] | None = None,
        applied: list[int] | None = None,
        seen: models.Migration | None = None,
        take: StepRun | None = None,
        run: StepRun | None = None,
    ) -> models.JournalEntry:
        """Record a transition about to be written to Placement.

        Under the migration's row lock it also checks the write is still
        wanted: the step ``owner`` still owns the migration, and (unless the
        transition only releases) the server is live with no delete asked
        for. A retry after a generation conflict journals again, so it is
        checked again: nothing a delete emptied is re-created.

        With ``holdings``, the same transaction records them as the
        migration's known holdings: what the write leads to, so that a write
        that succeeds needs no commit but its entry's ``applied``. While the
        entry is ``intended`` they are only what is expected (crash recovery
        and the executor settle an intended entry by reading Placement); the
        writer puts back what is held if the write is refused.

        :param phase: the strategy phase (e.g. ``prepare``, ``claim``, ``revert``).
        :param before: the holdings the transition starts from.
        :param target: the holdings it leads to.
        :param owner: the step token that must own the migration (None: any).
        :param releasing: the target holds nothing, so it may always go ahead.
        :param holdings: the migration's holdings once the write lands.
        :param applied: entries of the same step whose writes landed, marked
            ``applied`` in the same transaction (the list is emptied).
        :param seen: the caller's copy of the migration row. When the row
            has not changed since (its ``updated_at``, status and owner are
            the same under the lock), the migration as updated is that copy
            with the new holdings, and is not read back.
        :param take: a step run that takes the migration late
            (:attr:`~resize_sched.db.steps.StepRun.take_late`), not taken
            yet: the same transaction takes it first
            (:func:`~resize_sched.db.steps.take_in`), in the statement that
            records the holdings, instead of checking ``owner``; the run is
            marked taken once it commits.
        :param run: the step writing (``owner`` is its token): the seq of
            each entry it appends is kept on it (:attr:`StepRun.last_seq`),
            so that its next append, while the row is as ``seen``, needs
            neither lock nor read (:meth:`_journal_append`).
        :returns: the entry, ``intended``, numbered after the migration's last;
            with ``holdings``, its ``migration`` attribute is the migration
            as updated.
        :raises resize_sched.exception.MigrationNotFound: no such migration.
        :raises resize_sched.exception.StepNotDue: the write is no longer wanted.
        :raises resize_sched.exception.Invalid: before/target not mappings.
        """
        journals.check_intent(phase, before, target)
        append = Append(
            migration_uuid, phase, before, target, owner, releasing, holdings, applied, seen
        )
        for attempt in range(1, journals.SEQ_ATTEMPTS + 1):
            try:
                with self._writer() as session:
                    if take is not None:
                        # NOTE: a retry reads the last seq (below).
                        entry, updated = self._journal_append_taking(
                            session, take, append, seq_as_read=attempt == 1
                        )
                    else:
                        entry, updated = self._journal_append(
                            session,
                            append,
                            # NOTE: a retry reads the last seq on its own (below).
                            seq_in_lock=attempt == 1,
                            known_seq=known_seq(run, owner) if attempt == 1 else None,
                        )
                if take is not None:
                    take.taken = True
                for step in {id(r): r for r in (take, run) if r is not None}.values():
                    step.last_seq = entry.seq
                if updated is not None:
                    entry.migration = updated  # type: ignore[attr-defined]
                if applied:
                    applied.clear()
                return entry
            except INTEGRITY_ERRORS:
                # NOTE: a concurrent writer took the same seq; count again.
                LOG.debug("Journal seq race on migration %s (attempt %d)", migration_uuid, attempt)
            finally:
                if take is not None and not take.taken:
                    # NOTE: the event the take opened was rolled back with it.
                    take.event_id = None
        raise exception.Conflict(
            reason=f"could not append to the journal of migration {migration_uuid}"
        )

    def _journal_append(
        self,
        session: Any,
        append: Append,
        *,
        seq_in_lock: bool,
        known_seq: int | None = None,
    ) -> tuple[models.JournalEntry, models.Migration | None]:
        """Within ``session``: one attempt at :meth:`journal_intend`.

        :param seq_in_lock: read the last seq in the statement that locks
            the migration (one statement less) instead of after it.
        :param known_seq: the last seq as the step ``owner`` left it (its
            own last entry's): when the row is still as ``seen`` (no write
            since, so no entry: every append moves ``updated_at`` on), one
            compare-and-swap checks what the lock would and records the new
            ``updated_at`` and holdings, and the entry follows that seq.
        :returns: the entry and, with ``holdings``, the migration as updated.
        :raises oslo_db.exception.DBDuplicateEntry: another writer took the seq.
        """
        if known_seq is not None and whole_row(append.seen) and not commit_may_have_landed():
            done = self._append_unchanged(session, append, known_seq)
            if done is not None:
                return done
        migration_uuid, holdings = append.migration_uuid, append.holdings
        # NOTE: locking the migration row serialises appenders to one journal
        # (MySQL, PostgreSQL; SQLite has one writer anyway). The read of the
        # last seq is plain, never a locking read: on MySQL a locking read
        # takes a gap lock on an empty journal, and two resizes' first entries
        # would deadlock each other (a subquery of a SELECT ... FOR UPDATE is
        # not locked). Read in the locking statement, its snapshot may predate
        # the lock (PostgreSQL takes it when the statement starts; so may
        # InnoDB): a seq read stale is one another writer has taken, so the
        # insert fails on the (migration_uuid, seq) key and is retried, never
        # recorded wrong. A retry reads the seq in a statement of its own,
        # after the lock: its snapshot is newer than the previous appender's
        # commit, even under MySQL's REPEATABLE READ.
        #
        # On Galera the lock holds on its own node only, and only written
        # rows certify against each other. So the migration's row is always
        # written (its updated_at moved on, with the holdings or alone): a
        # step taking the migration over or a delete closing it (both write
        # that row) committed on another node makes one of the two fail
        # certification and run again whole. Two appends on two nodes
        # collide on that row and on the (migration_uuid, seq) key.
        params = {"m_uuid": migration_uuid}
        migration = session.execute(journal_lock_query(seq_in_lock), params).first()
        if migration is None:
            raise exception.MigrationNotFound(migration_id=migration_uuid)
        self._check_still_wanted(migration, append)
        last_seq, _insert, record_holdings = journal_statements()
        if commit_may_have_landed():
            # NOTE: an earlier run of this call may have committed this very
            # entry (its connection was lost while committing): not twice.
            mine = journals.last_intended_in(
                session,
                models.JournalEntry,
                migration_uuid,
                append.phase,
                append.before,
                append.target,
            )
            if mine is not None:
                return mine, session.get(models.Migration, migration.id) if holdings else None
        if migration.restoring and not append.releasing:
            self._hold_server(session, migration, append)
        last = migration.last_seq if seq_in_lock else session.scalar(last_seq, params)
        stamp = stamp_after(migration.updated_at)
        entry = append.insert_in(session, last, models.utcnow())
        journals.mark_applied_in(session, models.JournalEntry, append.applied or [])
        if holdings is None:
            session.execute(
                sa.update(models.Migration)
                .where(models.Migration.id == migration.id)
                .values(updated_at=stamp)
                .execution_options(synchronize_session=False)
            )
            return entry, None
        recorded = json.loads(json.dumps(dict(holdings)))
        session.execute(
            record_holdings, {**params, "new_holdings": recorded, "new_updated_at": stamp}
        )
        if unchanged_since(append.seen, migration_uuid, migration):
            # NOTE: the row is the caller's but for what was just written,
            # so it needs no reading back.
            return entry, copy_migration(append.seen, holdings=recorded, updated_at=stamp)
        return entry, read_migration(session, migration_uuid)

    @staticmethod
    def _append_unchanged(
        session: Any, append: Append, last: int
    ) -> tuple[models.JournalEntry, models.Migration | None] | None:
        """Within ``session``: :meth:`_journal_append` for a row still as
        ``seen``, or None (nothing written) when it is not.

        The compare-and-swap expects the owner and the ``updated_at`` seen,
        and a live server unless the transition releases: what the lock and
        :meth:`_check_still_wanted` check. It writes the row as the lock's
        path does (Galera certifies it against any other writer), and locks
        it, so the entry's seq, after ``last``, is taken by no one else.
        """
        seen = append.seen
        stamp = stamp_after(seen.updated_at)
        values: dict[str, Any] = {"updated_at": stamp}
        recorded = None
        if append.holdings is not None:
            recorded = values["holdings"] = json.loads(json.dumps(dict(append.holdings)))
        changed, _ = cas_update(
            session,
            models.Migration,
            append.migration_uuid,
            values,
            expected=[("task_owner", append.owner), ("updated_at", seen.updated_at)],
            fixed=() if append.releasing else (server_of_migration_ok(),),
            reload=False,
        )
        if not changed:
            return None
        entry = append.insert_in(session, last, models.utcnow())
        journals.mark_applied_in(session, models.JournalEntry, append.applied or [])
        if recorded is None:
            return entry, None
        return entry, copy_migration(seen, holdings=recorded, updated_at=stamp)

    def _journal_append_taking(
        self, session: Any, run: StepRun, append: Append, *, seq_as_read: bool = False
    ) -> tuple[models.JournalEntry, models.Migration | None]:
        """Within ``session``: one attempt at :meth:`journal_intend` that
        takes the migration for ``run`` first.

        The take's compare-and-swap checks what the lock and
        :meth:`_check_still_wanted` check otherwise (no other owner, the
        server live with no delete asked for), locks the row, which
        serialises appenders as the lock does, and records the holdings.
        The seq is the one the run's read brought when the row is still as
        read and ``seq_as_read``; else it is read after the take, in a
        statement of its own.

        :returns: the entry and, with ``holdings``, the migration as updated.
        :raises resize_sched.exception.StepNotDue: the step is no longer due.
        :raises sqlalchemy.exc.IntegrityError: another writer took the seq.
        """
        migration_uuid, holdings, seen = run.migration_uuid, append.holdings, append.seen
        if commit_may_have_landed():
            done = self._taken_by_earlier_run(
                session, run, append.phase, append.before, append.target
            )
            if done is not None:
                entry, migration = done
                return entry, migration if holdings is not None else None
        now = models.utcnow()
        values: dict[str, Any] = {"updated_at": now}
        recorded = None
        if holdings is not None:
            recorded = values["holdings"] = json.loads(json.dumps(dict(holdings)))
        seen_at = seen.updated_at if whole_row(seen) else None
        same = steps.take_in(session, run, values, seen_at=seen_at)
        last_seq = journal_statements()[0]
        if same and seq_as_read and run.last_seq is not None:
            # NOTE: the row is as the run read it, so no entry was appended
            # since (each append moves its updated_at on): the seq read then
            # is the last. Were it not, the insert would fail on the
            # (migration_uuid, seq) key and the next attempt read it here.
            last = run.last_seq
        else:
            last = session.scalar(last_seq, {"m_uuid": migration_uuid})
        entry = append.insert_in(session, last, now)
        if recorded is None:
            return entry, None
        if same:
            # NOTE: the row is the one the run read but for what the take wrote.
            return entry, copy_migration(
                seen, holdings=recorded, updated_at=now, task_owner=run.token
            )
        return entry, read_migration(session, migration_uuid)

    @staticmethod
    def _taken_by_earlier_run(
        session: Any,
        run: StepRun,
        phase: str,
        before: Mapping[str, Any],
        target: Mapping[str, Any],
    ) -> tuple[models.JournalEntry, models.Migration] | None:
        """Within ``session``: the entry and migration an earlier run of a
        taking append committed (its connection lost while committing), or
        None when it did not land.

        It landed when the run's token owns the migration and the journal's
        last entry is this very write, still intended. The take's event was
        opened by that commit: it is found open and reused.
        """
        migration = read_migration(session, run.migration_uuid, required=False)
        if migration is None or migration.task_owner != run.token:
            return None
        mine = journals.last_intended_in(
            session, models.JournalEntry, run.migration_uuid, phase, before, target
        )
        if mine is None:
            return None
        LOG.info(
            "Migration %s: taken by step %s and its %s entry written by an earlier run "
            "whose commit landed; taken as done",
            run.migration_uuid,
            run.token,
            phase,
        )
        steps.begin_in(session, run, migration.server_uuid, None)
        return mine, migration

    @staticmethod
    def _check_still_wanted(migration: Any, append: Append) -> None:
        uuid, phase = append.migration_uuid, append.phase
        if append.owner is not None and migration.task_owner != append.owner:
            raise exception.StepNotDue(
                migration_id=uuid,
                step=phase,
                reason="another step or a delete took the migration over",
            )
        if not append.releasing and not migration.server_live:
            raise exception.StepNotDue(
                migration_id=uuid, step=phase, reason="its server is being deleted"
            )

    @staticmethod
    def _hold_server(session: Any, migration: Any, append: Append) -> None:
        """Within ``session``: a retry of a failed restore (the migration's
        ``missing`` is set) gives the server its old flavor back on its
        host, so only while the server rests there: no task of its own, not
        offloaded, a host. Checked in the compare-and-swap that writes the
        server's row, which an offload's beginning writes too (any
        :meth:`~resize_sched.db.server_api.ServerApi.server_update` to
        ``shelving_offloading``, refused while this entry is ``intended``):
        of the two, one goes first and the other finds it.

        :raises resize_sched.exception.StepNotDue: the server does not rest
            on its host; nothing written.
        """
        server = models.Server
        held = session.execute(
            sa.update(server)
            .where(
                server.uuid == migration.server_uuid,
                server.deleted_at.is_(None),
                server.task_state.is_(None),
                server.status != models.STATUS_SHELVED_OFFLOADED,
                server.rp_uuid.is_not(None),
            )
            .values(updated_at=models.utcnow())
            .execution_options(synchronize_session=False)
        ).rowcount
        if not held:
            raise exception.StepNotDue(
                migration_id=append.migration_uuid,
                step=append.phase,
                reason="its server does not rest on its host (a task of its own, or offloaded)",
            )

    @retry_on_deadlock
    def journal_mark(
        self, entry_id: int, state: str, detail: str | None = None
    ) -> models.JournalEntry:
        """Mark an intended entry ``applied`` or ``abandoned``.

        :param detail: why, for an abandoned one (or any note).
        :returns: the entry as updated.
        :raises resize_sched.exception.Invalid: another target state.
        :raises resize_sched.exception.NotFound: no such entry.
        :raises resize_sched.exception.Conflict: the entry is no longer intended.
        """
        journals.check_mark(state)
        with self._writer() as session:
            result = session.execute(
                sa.update(models.JournalEntry)
                .where(
                    models.JournalEntry.id == entry_id,
                    models.JournalEntry.state == models.JOURNAL_INTENDED,
                )
                .values(state=state, detail=detail)
                .execution_options(synchronize_session=False)
            )
            entry = session.get(models.JournalEntry, entry_id, populate_existing=True)
        if entry is None:
            raise exception.NotFound(what=f"journal entry {entry_id}")
        if result.rowcount == 0:
            raise exception.Conflict(
                reason=f"journal entry {entry_id} is {entry.state}; only an intended "
                f"entry can be marked {state}"
            )
        return entry

    def journal_list(self, migration_uuid: str) -> list[models.JournalEntry]:
        """A migration's journal, in order.

        :returns: the entries by ``seq`` (empty for an unknown migration).
        """
        with self._reader() as session:
            return journals.entries_in(session, models.JournalEntry, migration_uuid)

    def journal_pending(self) -> list[models.JournalEntry]:
        """Every entry still ``intended``, over all migrations, oldest first."""
        with self._reader() as session:
            return journals.pending_in(session, models.JournalEntry)
