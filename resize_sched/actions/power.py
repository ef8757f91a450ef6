"""The first step of a stop or a start: the server's power task set by
compare-and-swap, from the states the table allows."""

from typing import Any

from resize_sched.actions.allowed import ALLOWED
from resize_sched.actions.common import take_server
from resize_sched.context import RequestContext
from resize_sched.db import action_api, states
from resize_sched.db.project_scope import ALL_PROJECTS, ProjectScope


def begin_power(
    db: Any,
    server_uuid: str,
    *,
    stop: bool,
    project_id: ProjectScope = ALL_PROJECTS,
    context: RequestContext | None = None,
) -> Any:
    """Record a stop (ACTIVE or ERROR on a host -> ``powering-off``) or a
    start (SHUTOFF -> ``powering-on``), atomically: of two, one wins.

    :param stop: stop (True) or start (False).
    :param context: the request; when given, its ``stop``/``start`` action is recorded.
    :returns: the server.
    :raises ServerNotFound: unknown server, or another project's.
    :raises ServerStateConflict: not idle in ACTIVE (stop) or SHUTOFF (start),
        or (stop) on no host.
    """
    return take_server(
        db,
        server_uuid,
        ALLOWED["os-stop" if stop else "os-start"],
        project_id=project_id,
        context=context,
        recorded=action_api.STOP if stop else action_api.START,
        on_host=stop,
        task_state=states.TASK_POWERING_OFF if stop else states.TASK_POWERING_ON,
    )
