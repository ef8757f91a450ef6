"""The migration journal's statements and rows: the locked read an append checks, the insert.

What :mod:`resize_sched.db.migration_journal_api` builds its appends from:
the statements (built once per shape), the entry to append
(:class:`Append`), the checks of a caller's migration row against the locked
one, and the detached rows handed back without another read.
"""

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import make_transient_to_detached

from resize_sched.db import models
from resize_sched.db.migration_checks import server_of_migration_ok
from resize_sched.db.steps import StepRun


@functools.cache
def journal_lock_query(with_last_seq: bool) -> sa.Select[Any]:
    """The migration whose uuid is bound to ``m_uuid``, locked, with what
    ``MigrationJournalApi.journal_intend`` checks (and its journal's last
    seq)."""
    journal = models.JournalEntry
    columns: list[Any] = [
        models.Migration.id,
        models.Migration.task_owner,
        models.Migration.server_uuid,
        models.Migration.status,
        models.Migration.updated_at,
        server_of_migration_ok().label("server_live"),
        # NOTE: a failed restore's retry (see MigrationJournalApi._hold_server).
        models.Migration.missing.is_not(None).label("restoring"),
    ]
    if with_last_seq:
        columns.append(
            sa.select(sa.func.max(journal.seq))
            .where(journal.migration_uuid == models.Migration.uuid)
            .scalar_subquery()
            .label("last_seq")
        )
    return (
        sa.select(*columns)
        .where(models.Migration.uuid == sa.bindparam("m_uuid"))
        .with_for_update()
    )


@functools.cache
def journal_statements() -> tuple[sa.Select[Any], sa.Insert, sa.Update]:
    """The last seq of the journal of the migration bound to ``m_uuid``; an
    entry's insert; that migration's holdings update."""
    journal = models.JournalEntry
    table: sa.Table = models.Migration.__table__  # type: ignore[assignment]
    return (
        sa.select(sa.func.max(journal.seq)).where(
            journal.migration_uuid == sa.bindparam("m_uuid")
        ),
        sa.insert(journal.__table__),
        sa.update(table)
        .where(table.c.uuid == sa.bindparam("m_uuid"))
        .values(
            holdings=sa.bindparam("new_holdings", type_=table.c.holdings.type),
            updated_at=sa.bindparam("new_updated_at", type_=table.c.updated_at.type),
        ),
    )


def detached(row: Any) -> Any:
    """``row``, built in Python, as if loaded and the session closed."""
    make_transient_to_detached(row)
    return row


def copy_migration(row: models.Migration, **changes: Any) -> models.Migration:
    """A detached copy of the migration ``row`` with ``changes`` applied."""
    values = {
        attr.key: getattr(row, attr.key) for attr in sa.inspect(models.Migration).column_attrs
    }
    values.update(changes)
    return detached(models.Migration(**values))


@dataclass(frozen=True)
class Append:
    """What one ``MigrationJournalApi.journal_intend`` appends, and the
    checks it asks for (see its parameters)."""

    migration_uuid: str
    phase: str
    before: Mapping[str, Any]
    target: Mapping[str, Any]
    owner: str | None = None
    releasing: bool = False
    holdings: Mapping[str, Any] | None = None
    applied: list[int] | None = None
    seen: Any = None

    def insert_in(self, session: Any, last: int | None, now: Any) -> models.JournalEntry:
        """Within ``session``: insert the ``intended`` entry numbered after
        ``last`` and return it, detached, as written."""
        values = {
            "migration_uuid": self.migration_uuid,
            "seq": (last or 0) + 1,
            "phase": self.phase,
            "before": dict(self.before),
            "target": dict(self.target),
            "state": models.JOURNAL_INTENDED,
            "detail": None,
            "created_at": now,
        }
        (entry_id,) = session.execute(journal_statements()[1], values).inserted_primary_key
        return detached(models.JournalEntry(id=entry_id, updated_at=None, **values))


def whole_row(seen: Any) -> bool:
    """Whether ``seen`` is a migration row with every column loaded."""
    return isinstance(seen, models.Migration) and not sa.inspect(seen).unloaded


def known_seq(run: StepRun | None, owner: str | None) -> int | None:
    """The last seq ``run`` knows, when it is the step that owns the
    migration (``owner``) and has appended or read it; else None."""
    if run is None or owner is None or run.owner != owner:
        return None
    return run.last_seq


def unchanged_since(seen: Any, uuid: str, locked: Any) -> bool:
    """Whether the caller's row ``seen`` is the migration as ``locked`` now.

    Every change to a migration moves its ``updated_at`` on, so a row read
    (or copied by :func:`copy_migration`) with the same one, status and owner is the
    row as it is.
    """
    if not whole_row(seen):
        return False
    return (
        seen.uuid == uuid
        and seen.id == locked.id
        and seen.updated_at is not None
        and seen.updated_at == locked.updated_at
        and seen.status == locked.status
        and seen.task_owner == locked.task_owner
    )


def read_migration(session: Any, uuid: str, *, required: bool = True) -> Any:
    """Within ``session``: the migration ``uuid`` as it is now (not as the
    session last loaded it); None when absent and not ``required``."""
    rows = session.scalars(
        sa.select(models.Migration)
        .where(models.Migration.uuid == uuid)
        .execution_options(populate_existing=True)
    )
    return rows.one() if required else rows.first()
