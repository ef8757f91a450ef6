"""Rules of ``/servers/{server_id}/migrations``.

Nova's names and defaults (``os_compute_api:servers:migrations:*``): a
project manager may list, force-complete and abort its servers' migrations;
only an administrator may show one, or see the host and node fields of the
list (null without ``index:host``).
"""

from oslo_policy import policy

from resize_sched.policies import base

SERVER_MIGRATIONS = "os_compute_api:servers:migrations:%s"

INDEX = SERVER_MIGRATIONS % "index"
INDEX_HOST = SERVER_MIGRATIONS % "index:host"
SHOW = SERVER_MIGRATIONS % "show"
FORCE_COMPLETE = SERVER_MIGRATIONS % "force_complete"
DELETE = SERVER_MIGRATIONS % "delete"

_COLLECTION = "/servers/{server_id}/migrations"
_ONE = "/servers/{server_id}/migrations/{migration_id}"

_RULES = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description="List the migrations of a server in progress.",
        operations=[{"method": "GET", "path": _COLLECTION}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=INDEX_HOST,
        check_str=base.ADMIN,
        description="Show where a server's migrations run: source_compute, "
        "source_node, dest_compute, dest_node and dest_host (null without this rule).",
        operations=[{"method": "GET", "path": _COLLECTION}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=SHOW,
        check_str=base.ADMIN,
        description="Show one migration of a server in progress.",
        operations=[{"method": "GET", "path": _ONE}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=FORCE_COMPLETE,
        check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description="Force a server's live migration to complete (a resize "
        "cannot be: answered 409, as Nova does).",
        operations=[{"method": "POST", "path": f"{_ONE}/action (force_complete)"}],
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=DELETE,
        check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description="Abort a server's live migration (a resize cannot be: "
        "answered 409, as Nova does).",
        operations=[{"method": "DELETE", "path": _ONE}],
        scope_types=["project"],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of a server's migrations."""
    return list(_RULES)
