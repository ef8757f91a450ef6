"""The first step of a delete: the server ``deleting`` and its resize in
flight closed, in one transaction; a delete wins over every later step."""

from typing import Any

from oslo_log import log as logging

from resize_sched.actions.common import record_action
from resize_sched.context import RequestContext
from resize_sched.db import action_api
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope

LOG = logging.getLogger(__name__)


def begin_delete(
    db: Any,
    server_uuid: str,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a delete: it wins over every step that comes after it.

    The server becomes ``deleting`` and its resize in flight (if any) ends in
    ``error`` in one transaction; the conductor then releases what both
    consumers hold. See :meth:`resize_sched.db.server_api.ServerApi.server_begin_delete`.

    :param context: the request; when given, its ``delete`` action is recorded.
    :raises ServerNotFound: unknown server, or another project's.
    """
    server = db.server_begin_delete(server_uuid, project_id)
    # NOTE: a server is deleted once: asking again (a retry) records nothing new.
    if not any(a.action == action_api.DELETE for a in db.action_list(server_uuid)):
        record_action(db, context, server_uuid, action_api.DELETE)
    LOG.info("Server %s: delete recorded", server_uuid)
    return server
