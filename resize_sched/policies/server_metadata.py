"""Rules of ``/servers/{server_id}/metadata``.

Nova's six rules and defaults: the server's project reads its metadata and
its members change it; an administrator may do both on any server.
"""

from resize_sched.policies import base

SERVER_METADATA = "os_compute_api:server-metadata:%s"

INDEX = SERVER_METADATA % "index"
SHOW = SERVER_METADATA % "show"
CREATE = SERVER_METADATA % "create"
UPDATE_ALL = SERVER_METADATA % "update_all"
UPDATE = SERVER_METADATA % "update"
DELETE = SERVER_METADATA % "delete"

_ALL = "/servers/{server_id}/metadata"
_ONE = "/servers/{server_id}/metadata/{key}"

RULES = [
    base.rule(INDEX, base.PROJECT_READER_OR_ADMIN, "List a server's metadata.", f"GET {_ALL}"),
    base.rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show one metadata item.", f"GET {_ONE}"),
    base.rule(
        CREATE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Add metadata items to a server, or change those with the same keys.",
        f"POST {_ALL}",
    ),
    base.rule(
        UPDATE_ALL,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Replace every metadata item of a server.",
        f"PUT {_ALL}",
    ),
    base.rule(UPDATE, base.PROJECT_MEMBER_OR_ADMIN, "Set one metadata item.", f"PUT {_ONE}"),
    base.rule(DELETE, base.PROJECT_MEMBER_OR_ADMIN, "Delete one metadata item.", f"DELETE {_ONE}"),
]
