"""One resize or cold migration driven in this process: the conductor's steps, minus RPC.

The simulation (:mod:`~resize_sched.simulate.workload`,
:mod:`~resize_sched.simulate.drain`) and the benchmark
(``benchmarks/worker.py``) both run a move as the conductor runs it, with no
RPC in between: ``begin`` (the API's database step), ``schedule`` (prepare,
query, claim), ``finish`` (the destination reports), then ``confirm`` or
``revert``; or ``fail`` when something unexpected stopped it. They differ
only in what they measure around the steps, so the steps and the Placement
request counting live here, once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from resize_sched import exception
from resize_sched.db.api import Database
from resize_sched.placement.client import PlacementClient

LOG = logging.getLogger(__name__)

#: The statuses of a migration that ``fail`` can still send back to its source.
UNFINISHED = ("pre-migrating", "migrating")


@dataclass
class Scheduled:
    """How a schedule ended, as the simulation records it.

    :ivar result: ``ok``, the NoValidHost kind (``deferred``, ``infeasible``),
        ``restore refused``, or ``error: <exception class>``.
    :ivar dest: the destination when ``ok``.
    :ivar requests: the Placement requests the schedule made.
    :ivar returned: the schedule returned (``ok``, or no destination).
    """

    result: str
    dest: Any = None
    requests: int = 0
    returned: bool = False

    @property
    def ok(self) -> bool:
        return self.result == "ok"


@dataclass
class Decision:
    """How a confirm or revert ended: which one ran, and its Placement requests."""

    decision: str
    revert_refused: bool
    requests: int


class MoveDriver:
    """Runs the task steps of one move at a time and counts their Placement requests.

    :param tasks: the conductor's task for the move
        (:class:`~resize_sched.conductor.tasks.resize.ResizeTask` or
        :class:`~resize_sched.conductor.tasks.migrate.MigrateTask`), built on
        ``client``.
    :param client: the Placement client the task uses; its request count is
        reset before each counted step.
    :param db: resize_sched's database (the migration's status is read there).
    """

    def __init__(self, tasks: Any, client: PlacementClient, db: Database) -> None:
        self.tasks = tasks
        self.client = client
        self.db = db

    def begin(self, server_uuid: str, *args: Any, **kwargs: Any) -> Any:
        """The API's database step; the migration it recorded."""
        return self.tasks.begin(server_uuid, *args, **kwargs)

    def schedule(self, migration_uuid: str) -> Any:
        """Schedule and claim; the request count starts from zero (read it after)."""
        self.client.reset_request_count()
        return self.tasks.schedule(migration_uuid)

    def try_schedule(self, migration_uuid: str, what: str, server_uuid: str) -> Scheduled:
        """Schedule and claim, every way it can end recorded rather than raised.

        An unexpected error is logged and the move failed back to its source.

        :param what: the move, for the log (``Resize``, ``Cold migration``).
        """
        try:
            dest = self.schedule(migration_uuid)
        except exception.RestoreFailed:
            outcome = Scheduled("restore refused")
        except exception.NoValidHost as exc:
            outcome = Scheduled(exc.kind)
        except Exception as exc:  # recorded, never fatal: the report counts errors
            LOG.error("%s of %s failed unexpectedly: %s", what, server_uuid, exc)
            outcome = Scheduled(f"error: {type(exc).__name__}")
            try:
                self.abandon(migration_uuid, "simulation: unexpected error")
            except Exception as why:  # recorded by the caller already
                LOG.error("Could not fail migration %s back: %s", migration_uuid, why)
        else:
            result = "ok" if dest is not None else "error: not scheduled"
            outcome = Scheduled(result, dest, returned=True)
        outcome.requests = self.client.request_count
        return outcome

    def finish(self, migration_uuid: str) -> None:
        """The destination reports the move done: the server waits in VERIFY_RESIZE."""
        self.tasks.finish(migration_uuid)

    def decide(self, server_uuid: str, confirm: bool) -> int:
        """Confirm or revert once; the Placement requests it made."""
        self.client.reset_request_count()
        if confirm:
            self.tasks.confirm(server_uuid)
        else:
            self.tasks.revert(server_uuid)
        return self.client.request_count

    def revert_or_confirm(self, server_uuid: str, revert: bool) -> Decision:
        """Revert (or confirm); a revert Placement refuses becomes a confirm.

        Keeping the new flavor is what an operator would do rather than leave
        the server waiting. The requests counted are the whole decision's,
        the refused revert's among them.
        """
        self.client.reset_request_count()
        refused = False
        if revert:
            try:
                self.tasks.revert(server_uuid)
                return Decision("revert", False, self.client.request_count)
            except exception.ClaimRefused:
                refused = True
        self.tasks.confirm(server_uuid)
        return Decision("revert" if revert else "confirm", refused, self.client.request_count)

    def abandon(
        self, migration_uuid: str, reason: str, statuses: tuple[str, ...] = UNFINISHED
    ) -> None:
        """Fail the move back to its source, as the conductor does when it cannot go on.

        Nothing is done when the migration is in none of ``statuses`` (it
        already ended: ``fail`` ran, e.g. RestoreFailed).
        """
        if self.db.migration_get(migration_uuid).status in statuses:
            self.tasks.fail(migration_uuid, kind="failed", reason=reason)
