"""What the two Placement write journals share.

A resize journals its writes on its migration
(:mod:`resize_sched.db.migration_journal_api`), a build or delete on its server
(:mod:`resize_sched.db.server_journal_api`). Both tables have the same
columns (:class:`resize_sched.db.models.JournalMixin`) and the same life: an
entry is written ``intended`` before its Placement write, then marked
``applied`` or ``abandoned``. The checks, statements and reads that life
needs are here, once, for either table; how an entry is appended (which row
is locked, what "still wanted" means) and marked (whether an entry settled
meanwhile is an error) stays with its owner.
"""

import functools
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa

from resize_sched import exception
from resize_sched.db import models

_J = TypeVar("_J", bound=models.JournalMixin)

#: Attempts at taking the next seq when another writer took it first.
SEQ_ATTEMPTS = 5


def check_intent(phase: Any, before: Any, target: Any) -> None:
    """Check what an ``intended`` entry is to record.

    :raises resize_sched.exception.Invalid: ``before`` or ``target`` is not
        a mapping, or ``phase`` is not a non-empty string.
    """
    if not isinstance(before, Mapping) or not isinstance(target, Mapping):
        raise exception.Invalid(reason="journal before and target must be mappings")
    if not isinstance(phase, str) or not phase:
        raise exception.Invalid(reason="a journal entry needs a phase")


def check_mark(state: str) -> None:
    """Check the state an intended entry is to be marked with.

    :raises resize_sched.exception.Invalid: not ``applied`` or ``abandoned``.
    """
    if state not in (models.JOURNAL_APPLIED, models.JOURNAL_ABANDONED):
        raise exception.Invalid(
            reason=f"a journal entry can be marked applied or abandoned, not {state!r}"
        )


def entries_in(session: Any, journal: type[_J], owner: str) -> list[_J]:
    """Within ``session``: the journal of ``owner`` (its uuid), in order of
    ``seq`` (empty for an unknown owner)."""
    column = getattr(journal, journal._owner_attr)
    return list(session.scalars(sa.select(journal).where(column == owner).order_by(journal.seq)))


def pending_in(session: Any, journal: type[_J]) -> list[_J]:
    """Within ``session``: every entry of ``journal`` still ``intended``, oldest first."""
    return list(
        session.scalars(
            sa.select(journal).where(journal.state == models.JOURNAL_INTENDED).order_by(journal.id)
        )
    )


def mark_applied_in(
    session: Any, journal: type[models.JournalMixin], entry_ids: Iterable[int]
) -> None:
    """Within ``session``: mark the entries of ``journal`` (the table's
    model) that are still intended ``applied``.

    One settled meanwhile (by crash recovery, reading the same outcome) is
    left as it is.
    """
    ids = list(entry_ids)
    if not ids:
        return
    session.execute(_mark_applied(journal), {"ids": ids})


@functools.cache
def _mark_applied(journal: type[models.JournalMixin]) -> sa.Update:
    # NOTE: built once per table (see resize_sched.db.session.cas_update);
    # updated_at is set by the column's onupdate.
    table: sa.Table = journal.__table__  # type: ignore[attr-defined]
    return (
        sa.update(table)
        .where(
            table.c.id.in_(sa.bindparam("ids", expanding=True)),
            table.c.state == models.JOURNAL_INTENDED,
        )
        .values(state=models.JOURNAL_APPLIED)
    )


def last_intended_in(
    session: Any,
    journal: type[_J],
    owner: str,
    phase: str,
    before: Mapping[str, Any],
    target: Mapping[str, Any],
) -> _J | None:
    """Within ``session``: the last entry of ``owner``'s journal if it is
    ``intended`` and records this very write (``phase``, ``before``,
    ``target``), else None.

    For a run of an append whose earlier run's COMMIT may have landed
    (:func:`resize_sched.db.session.commit_may_have_landed`): that entry is
    the earlier run's, and the append is done.
    """
    column = getattr(journal, journal._owner_attr)
    last = session.scalars(
        sa.select(journal)
        .where(column == owner)
        .order_by(journal.seq.desc())
        .limit(1)
        .execution_options(populate_existing=True)
    ).first()
    if (
        last is None
        or last.state != models.JOURNAL_INTENDED
        or (last.phase, last.before, last.target) != (phase, dict(before), dict(target))
    ):
        return None
    return last
