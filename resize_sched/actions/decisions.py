"""The first step of a resize's confirm or revert: the server and its
``finished`` migration taken by compare-and-swap, from VERIFY_RESIZE."""

from typing import Any

from oslo_config import cfg

from resize_sched import exception
from resize_sched.actions.allowed import ALLOWED
from resize_sched.actions.common import check_upsize, record_action
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope


def _begin_decision(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope,
    action: str,
    values: dict[str, Any],
    context: RequestContext | None = None,
    quota_conf: cfg.ConfigOpts | None = None,
) -> Any:
    """Take the server (VERIFY_RESIZE, no task) and its ``finished``
    migration for ``action`` (``confirmResize`` or ``revertResize``)."""
    allowed = ALLOWED[action]
    operation = allowed.cas_operation
    server = db.server_get(server_uuid, project_id=project_id)
    migration = db.migration_get_in_progress_for_server(server_uuid)
    if (
        not allowed.status_allows(server)
        or migration is None
        or migration.status != states.MIGRATION_FINISHED
    ):
        raise exception.ServerStateConflict(
            server_id=server_uuid,
            actual=server.status,
            operation=operation,
            expected=allowed.words,
        )
    if quota_conf is not None and action == "revertResize":
        # NOTE: as Nova: in VERIFY_RESIZE the server counts at its new
        # flavor, so reverting a resize down adds the difference back.
        check_upsize(db, quota_conf, server, migration.new_flavor, migration.old_flavor)
    db.server_update(server_uuid, expected=allowed.expected(), operation=operation, **values)
    status = "confirming" if action == "confirmResize" else "reverting"
    # NOTE: a refusal recorded for the sweep's retry is the past once any
    # decision begins (resize_sched.conductor.retry).
    migration = db.migration_update(
        migration.uuid,
        expected_status=states.MIGRATION_FINISHED,
        status=status,
        refused_decision=None,
    )
    recorded = action_api.CONFIRM_RESIZE if action == "confirmResize" else action_api.REVERT_RESIZE
    record_action(db, context, server_uuid, recorded)
    return migration


def begin_confirm(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a confirm: migration ``finished`` -> ``confirming``.

    :param context: the request; when given, its ``confirmResize`` action is recorded.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not in VERIFY_RESIZE.
    """
    return _begin_decision(
        db, server_uuid, project_id, "confirmResize", {"task_state": "resize_confirming"}, context
    )


def begin_revert(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
    quota_conf: cfg.ConfigOpts | None = None,
) -> Any:
    """Record a revert: server REVERT_RESIZE, migration ``finished`` -> ``reverting``.

    :param context: the request; when given, its ``revertResize`` action is recorded.
    :param quota_conf: check quota first, as Nova: reverting a resize down
        gives back the larger old flavor.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: the server is not in VERIFY_RESIZE.
    :raises OverQuota: the old flavor no longer fits the project's limits.
    """
    return _begin_decision(
        db,
        server_uuid,
        project_id,
        "revertResize",
        {"status": "REVERT_RESIZE", "task_state": "resize_reverting"},
        context,
        quota_conf,
    )
