"""What the migration data API modules share: value checks and WHERE clauses.

The checks refuse a bad migration status, error kind or type before anything
is written; the clauses are the conditions about a migration's server that
every step's compare-and-swap carries (live, no delete asked for), and the
one that keeps an offload from beginning while a restore is being written
(:func:`no_restore_in_flight`). Used by
:mod:`resize_sched.db.migration_api`, :mod:`resize_sched.db.step_api`,
:mod:`resize_sched.db.migration_journal_api` and :mod:`resize_sched.db.server_api`.
"""

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from resize_sched import exception
from resize_sched.db import models


def check_migration_values(values: Mapping[str, Any]) -> None:
    """Refuse an unknown status, error kind or migration type among ``values``.

    :raises resize_sched.exception.Invalid: one of them is unknown.
    """
    if "status" in values and values["status"] not in models.MIGRATION_STATUSES:
        raise exception.Invalid(reason=f"unknown migration status {values['status']!r}")
    if "error_kind" in values and values["error_kind"] not in (*models.ERROR_KINDS, None):
        raise exception.Invalid(reason=f"unknown error kind {values['error_kind']!r}")
    if "migration_type" in values and values["migration_type"] not in models.MIGRATION_TYPES:
        raise exception.Invalid(reason=f"unknown migration type {values['migration_type']!r}")


def status_list(value: str | Iterable[str]) -> list[str]:
    """One status or several, as a list."""
    return [value] if isinstance(value, str) else list(value)


def server_not_deleting() -> list[sa.ColumnElement[bool]]:
    """WHERE clauses: the server is live and no delete has been asked for.

    A delete is recorded (``task_state = deleting``) before anything else
    happens to it; every later step's compare-and-swap carries these.
    """
    return list(server_not_deleting_clauses())


@functools.cache
def server_not_deleting_clauses() -> tuple[sa.ColumnElement[bool], ...]:
    # NOTE: built once: statements are kept by these very objects (cas_update).
    return (
        models.Server.deleted_at.is_(None),
        sa.or_(
            models.Server.task_state.is_(None),
            models.Server.task_state != models.TASK_DELETING,
        ),
    )


@functools.cache
def server_of_migration_ok() -> sa.ColumnElement[bool]:
    return sa.exists().where(
        models.Server.uuid == models.Migration.server_uuid, *server_not_deleting_clauses()
    )


@functools.cache
def no_restore_in_flight() -> sa.ColumnElement[bool]:
    """WHERE clause on ``servers``: no restore of what a failed resize left
    missing is being written for the server (no ``intended`` journal entry
    of a migration of its whose ``missing`` is set).

    Such a restore gives the server its old flavor back on its host; an
    offload gives everything back. The restore's journal entry checks the
    server is resting on its host and writes the server's row in the same
    transaction (:mod:`resize_sched.db.migration_journal_api`); an offload,
    whoever begins it, is a compare-and-swap on that row to
    ``shelving_offloading``, which carries this clause
    (:mod:`resize_sched.db.server_api`). So one goes first and the other
    finds it: the restore an offloaded server, the offload a restore still
    in flight.
    """
    migration, entry = models.Migration, models.JournalEntry
    return ~sa.exists().where(
        migration.server_uuid == models.Server.uuid,
        migration.missing.is_not(None),
        entry.migration_uuid == migration.uuid,
        entry.state == models.JOURNAL_INTENDED,
    )
