"""The cold migration flow: a resize to the server's own flavor, on another host.

A cold migration (``migrate``, ``migration_type = migration``) runs every
step of a resize (:class:`~resize_sched.conductor.tasks.resize.ResizeTask`):
the migration record holds the source while the destination is claimed,
compute runs prep_resize, resize and finish_resize, and the server waits in
VERIFY_RESIZE for a confirm or a revert, as in Nova. What is its own:

- it begins with the server's flavor as both old and new, so each strategy's
  targets hold that flavor once on each host (what ``legacy`` writes);
- it never stays on the source, and with ``host`` (2.56) the scheduler
  chooses among that host alone (``requested_host`` on the migration;
  see :meth:`~resize_sched.conductor.tasks.move.MoveTask._scheduling_request`);
- a verdict without a host speaks of a migration, not a flavor.
"""

from typing import Any

from resize_sched import actions
from resize_sched.conductor.tasks.resize import ResizeTask
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope


class MigrateTask(ResizeTask):
    """Runs one server's cold migration through its phases.

    :param deps: configuration, database, Placement client, scheduler, executor.
    """

    def begin(  # type: ignore[override]
        self, server_uuid: str, host: str | None = None, project_id: ProjectScope = ALL_PROJECTS
    ) -> Any:
        """Validate and record a cold migration with the strategy configured now.

        See :func:`resize_sched.actions.begin_migrate` for the errors.
        """
        strategy = self.deps.configured_strategy()
        return actions.begin_migrate(self.db, strategy, server_uuid, host, project_id)
