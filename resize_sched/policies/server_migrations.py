"""Rules of ``/servers/{server_id}/migrations``.

Nova's names and defaults (``os_compute_api:servers:migrations:*``): a
project manager may list, force-complete and abort its servers' migrations;
only an administrator may show one, or see the host and node fields of the
list (null without ``index:host``).
"""

from resize_sched.policies import base

SERVER_MIGRATIONS = "os_compute_api:servers:migrations:%s"

INDEX = SERVER_MIGRATIONS % "index"
INDEX_HOST = SERVER_MIGRATIONS % "index:host"
SHOW = SERVER_MIGRATIONS % "show"
FORCE_COMPLETE = SERVER_MIGRATIONS % "force_complete"
DELETE = SERVER_MIGRATIONS % "delete"

_COLLECTION = "/servers/{server_id}/migrations"
_ONE = "/servers/{server_id}/migrations/{migration_id}"

RULES = [
    base.rule(
        INDEX,
        base.PROJECT_MANAGER_OR_ADMIN,
        "List the migrations of a server in progress.",
        f"GET {_COLLECTION}",
    ),
    base.rule(
        INDEX_HOST,
        base.ADMIN,
        "Show where a server's migrations run: source_compute, "
        "source_node, dest_compute, dest_node and dest_host (null without this rule).",
        f"GET {_COLLECTION}",
    ),
    base.rule(SHOW, base.ADMIN, "Show one migration of a server in progress.", f"GET {_ONE}"),
    base.rule(
        FORCE_COMPLETE,
        base.PROJECT_MANAGER_OR_ADMIN,
        "Force a server's live migration to complete (a resize "
        "cannot be: answered 409, as Nova does).",
        f"POST {_ONE}/action (force_complete)",
    ),
    base.rule(
        DELETE,
        base.PROJECT_MANAGER_OR_ADMIN,
        "Abort a server's live migration (a resize cannot be: answered 409, as Nova does).",
        f"DELETE {_ONE}",
    ),
]
