"""Rules of ``/servers/{server_id}/os-instance-actions``.

Nova's four rules: ``list`` and ``show`` let the server's project read its
actions; ``events`` shows every field of the events (``traceback``, and
``host`` from 2.62) and, before 2.51, the events at all; ``events:details``
is Nova's 2.84 rule, kept so a Nova policy file means the same here (our
highest microversion is below 2.84, so it never shows anything).
"""

from resize_sched.policies import base

INSTANCE_ACTIONS = "os_compute_api:os-instance-actions:%s"

LIST = INSTANCE_ACTIONS % "list"
SHOW = INSTANCE_ACTIONS % "show"
EVENTS = INSTANCE_ACTIONS % "events"
EVENTS_DETAILS = INSTANCE_ACTIONS % "events:details"

_LIST = "GET /servers/{server_id}/os-instance-actions"
_SHOW = "GET /servers/{server_id}/os-instance-actions/{request_id}"

RULES = [
    base.rule(
        LIST, base.PROJECT_READER_OR_ADMIN, "List the actions recorded for a server.", _LIST
    ),
    base.rule(
        SHOW, base.PROJECT_READER_OR_ADMIN, "Show one action of a server, with its events.", _SHOW
    ),
    base.rule(
        EVENTS,
        base.ADMIN,
        "Show every field of an action's events: the traceback of a "
        "failed step and (from 2.62) the host it ran on. Below 2.51, without this "
        "rule the events are not shown at all.",
        _SHOW,
    ),
    base.rule(
        EVENTS_DETAILS,
        base.ADMIN,
        "Show the details of an action's events (microversion 2.84, "
        "above the highest this API serves).",
        _SHOW,
    ),
]
