"""The first step of a shelve, a shelve offload and an unshelve: the
server's task set by compare-and-swap, from the states the table allows."""

from typing import Any

from oslo_log import log as logging

from resize_sched import exception
from resize_sched.actions.allowed import ALLOWED
from resize_sched.actions.common import record_action, take_server
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope

LOG = logging.getLogger(__name__)

_SHELVE = ALLOWED["shelve"]
_OFFLOAD = ALLOWED["shelveOffload"]
_UNSHELVE = ALLOWED["unshelve"]

#: The states a server may be shelved from, and unshelved from (the table's).
SHELVABLE: tuple[str, ...] = _SHELVE.status or ()
UNSHELVABLE: tuple[str, ...] = _UNSHELVE.status or ()

#: ``availability_zone`` not given to :func:`begin_unshelve` (None is a value).
KEEP_ZONE: Any = object()


def begin_shelve(
    db: Any,
    server_uuid: str,
    *,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a shelve: ACTIVE or SHUTOFF with no task -> task ``shelving``.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle in a state that may be shelved.
    """
    server = take_server(
        db,
        server_uuid,
        _SHELVE,
        project_id=project_id,
        context=context,
        recorded=action_api.SHELVE,
        on_host=True,
        task_state=states.TASK_SHELVING,
    )
    LOG.info("Server %s: shelve recorded", server_uuid)
    return server


def begin_shelve_offload(
    db: Any,
    server_uuid: str,
    *,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record an offload: SHELVED with no task -> task ``shelving_offloading``.

    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle and SHELVED.
    """
    server = take_server(
        db,
        server_uuid,
        _OFFLOAD,
        project_id=project_id,
        context=context,
        recorded=action_api.SHELVE_OFFLOAD,
        task_state=states.TASK_SHELVING_OFFLOADING,
    )
    LOG.info("Server %s: shelve offload recorded", server_uuid)
    return server


def check_unshelvable(server: Any, availability_zone: Any = KEEP_ZONE) -> None:
    """Refuse an unshelve of a server that is not idle and shelved, or one
    to an availability zone of a server that is not offloaded (409, as Nova).

    :raises ServerStateConflict: either.
    """
    if not _UNSHELVE.allows(server):
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=f"{server.status}" + (f"/{server.task_state}" if server.task_state else ""),
            operation=_UNSHELVE.cas_operation,
            expected=_UNSHELVE.words,
        )
    if availability_zone is not KEEP_ZONE and server.status != states.STATUS_SHELVED_OFFLOADED:
        raise exception.ServerStateConflict(
            server_id=server.uuid,
            actual=server.status,
            operation="unshelve to an availability zone",
            expected=states.STATUS_SHELVED_OFFLOADED,
        )


def begin_unshelve(
    db: Any,
    server_uuid: str,
    *,
    availability_zone: Any = KEEP_ZONE,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record an unshelve: SHELVED or SHELVED_OFFLOADED with no task -> task
    ``unshelving``.

    :param availability_zone: (microversion 2.77) the zone an offloaded
        server is to be placed in from now on, checked by the caller;
        recorded on the server and its request spec (:data:`KEEP_ZONE`: as it is).
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle and shelved, or a zone given for a
        server that is not offloaded (as Nova, 409).
    """
    server = db.server_get(server_uuid, project_id=project_id)
    check_unshelvable(server, availability_zone)
    values: dict[str, Any] = {"task_state": states.TASK_UNSHELVING}
    expected = _UNSHELVE.expected()
    if availability_zone is not KEEP_ZONE:
        expected["status"] = states.STATUS_SHELVED_OFFLOADED
        values["availability_zone"] = availability_zone
    server = db.server_update(
        server_uuid, expected=expected, operation=_UNSHELVE.cas_operation, **values
    )
    if availability_zone is not KEEP_ZONE:
        db.request_spec_update(server_uuid, availability_zone=availability_zone)
    record_action(db, context, server_uuid, action_api.UNSHELVE)
    LOG.info("Server %s: unshelve recorded (%s)", server_uuid, server.status)
    return server
