"""Placement requests per cold migration, live migration and evacuation.

Each move runs through the real task flows with no RPC in between, as the
resize cycles of ``resize_bench.py`` do, and is counted the same way: the
conductor's Placement client's request count, reset before each step (our
compute hosts make no Placement request in a move; a compute service's
reports of its inventory are not a move's). The phases:

* cold migration: schedule and claim through the destination's finish (the
  server in VERIFY_RESIZE), then a confirm or a revert, in turn;
* live migration: schedule and claim and the destination's "prepared" (to
  the hand-over), then the completion (the source's holding given back), or
  a rollback after the destination was prepared (the hand-over failed);
* evacuation: schedule and claim and the destination's "rebuilt" (to the
  rebuild), then the source given back once its compute service reports
  again.

:data:`NOVA` holds Nova 34.0.0's requests for the same moves, counted in
Nova's own functional harness (``contrib/nova/test_placement_request_counts.py``,
run by ``tox -e nova -- --figures``; ``contrib/nova/README.rst``): what its
conductor, scheduler and compute services request from the API call until
the move's state is reached and its last casts are done.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from resize_sched import actions
from resize_sched.conductor.tasks.base import TaskDeps
from resize_sched.conductor.tasks.evacuate import EvacuationTask
from resize_sched.conductor.tasks.live_migrate import LiveMigrationTask
from resize_sched.conductor.tasks.migrate import MigrateTask

COLD = "cold migration"
LIVE = "live migration"
EVACUATION = "evacuation"

#: (move, phase) in the order the table shows them; "whole" is the sum of
#: the phases before it.
PHASES: tuple[tuple[str, str], ...] = (
    (COLD, "to VERIFY_RESIZE"),
    (COLD, "confirm"),
    (COLD, "revert"),
    (LIVE, "to the hand-over"),
    (LIVE, "completion"),
    (LIVE, "whole"),
    (LIVE, "rollback"),
    (EVACUATION, "to the rebuild"),
    (EVACUATION, "source back"),
    (EVACUATION, "whole"),
)

#: Nova 34.0.0 as released (``legacy``, its only behaviour), the same moves of
#: a server between two hosts, counted by ``tox -e nova -- --unpatched
#: --figures`` (``contrib/nova/README.rst``), phase by phase: a cold
#: migration from the API call until VERIFY_RESIZE (7 conductor and
#: scheduler, 4 compute, and nova-api's read of the source's traits), then
#: the confirm and the revert (compute); a live migration until the source's
#: driver starts the hand-over (7 conductor and scheduler, 1 compute), then
#: the rest until the source's allocation is gone (5, compute), and the
#: rollback after a failed hand-over (4, compute); an evacuation until the
#: server runs on the destination (3 scheduler, 3 compute), then the
#: clean-up of the source compute service starting again (3, its
#: ``_destroy_evacuated_instances``; the service's own start is not counted).
NOVA: dict[tuple[str, str], int] = {
    (COLD, "to VERIFY_RESIZE"): 12,
    (COLD, "confirm"): 4,
    (COLD, "revert"): 6,
    (LIVE, "to the hand-over"): 8,
    (LIVE, "completion"): 5,
    (LIVE, "whole"): 13,
    (LIVE, "rollback"): 4,
    (EVACUATION, "to the rebuild"): 6,
    (EVACUATION, "source back"): 3,
    (EVACUATION, "whole"): 9,
}

#: Called after each step with the step's name and the migration's uuid
#: (the tests assert the allocations there).
AfterStep = Callable[[str, str], None]


class MoveRunner:
    """Runs moves of servers and counts the Placement requests of each phase.

    :param deps: the conductor's configuration, database, client and executor;
        the client's request count is the one counted.
    :param after: called after every step (None: nothing).
    """

    def __init__(self, deps: TaskDeps, after: AfterStep | None = None) -> None:
        self.db = deps.db
        self.client = deps.client
        self.migrations = MigrateTask(deps)
        self.lives = LiveMigrationTask(deps)
        self.evacuations = EvacuationTask(deps)
        self.after: AfterStep = after or (lambda step, migration: None)
        #: (move, phase) -> the requests of each time it ran
        self.counts: dict[tuple[str, str], list[int]] = collections.defaultdict(list)

    def _count(self, migration_uuid: str, *steps: tuple[str, Callable[[], Any]]) -> int:
        """Run ``steps`` of one move in turn; the Placement requests they made.

        :raises RuntimeError: a step was not due (it returned None).
        """
        total = 0
        for name, step in steps:
            self.client.reset_request_count()
            result = step()
            total += self.client.request_count
            if result is None:
                raise RuntimeError(f"migration {migration_uuid}: the {name} step was not due")
            self.after(name, migration_uuid)
        return total

    def cold_migration(self, server_uuid: str, confirm: bool) -> None:
        """Migrate ``server_uuid`` to another host, then confirm or revert."""
        m = self.migrations.begin(server_uuid).uuid
        scheduled = self._count(
            m,
            ("schedule", lambda: self.migrations.schedule(m)),
            ("finish", lambda: self.migrations.finish(m)),
        )
        self.counts[(COLD, "to VERIFY_RESIZE")].append(scheduled)
        decision = "confirm" if confirm else "revert"
        task = self.migrations.confirm if confirm else self.migrations.revert
        decided = self._count(m, (decision, lambda: task(server_uuid)))
        self.counts[(COLD, decision)].append(decided)

    def live_migration(self, server_uuid: str, complete: bool) -> None:
        """Live migrate ``server_uuid`` to another host; complete it, or roll
        it back once the destination is prepared (the hand-over failed)."""
        m = actions.begin_live_migration(self.db, server_uuid).uuid
        handed_over = self._count(
            m,
            ("schedule", lambda: self.lives.schedule(m)),
            ("prepared", lambda: self.lives.prepared(m, self.db.migration_get(m).dest_host)),
        )
        if complete:
            completed = self._count(m, ("complete", lambda: self.lives.complete(m)))
            self.counts[(LIVE, "to the hand-over")].append(handed_over)
            self.counts[(LIVE, "completion")].append(completed)
            self.counts[(LIVE, "whole")].append(handed_over + completed)
            return
        rolled_back = self._count(
            m, ("rollback", lambda: self.lives.rollback(m, "benchmark: the hand-over failed"))
        )
        self.counts[(LIVE, "rollback")].append(rolled_back)

    def evacuation(self, server_uuid: str) -> None:
        """Evacuate ``server_uuid`` to another host, then give its source
        back as when the source's compute service reports again."""
        m = actions.begin_evacuation(self.db, server_uuid).uuid
        rebuilt = self._count(
            m,
            ("schedule", lambda: self.evacuations.schedule(m)),
            ("rebuilt", lambda: self.evacuations.rebuilt(m, self.db.migration_get(m).dest_host)),
        )
        back = self._count(m, ("source back", lambda: self.evacuations.source_back(m)))
        self.counts[(EVACUATION, "to the rebuild")].append(rebuilt)
        self.counts[(EVACUATION, "source back")].append(back)
        self.counts[(EVACUATION, "whole")].append(rebuilt + back)
