"""Rules of ``GET /os-migrations``.

Three rules, as in Nova: ``index`` lets a caller list at all; listing
anything beyond the caller's own project (no ``project_id`` filter, or
another project's) also needs ``index:all_projects``; without
``index:host`` the host and node fields are null.
"""

from oslo_policy import policy

from resize_sched.policies import base

MIGRATIONS = "os_compute_api:os-migrations:%s"

INDEX = MIGRATIONS % "index"
INDEX_ALL_PROJECTS = MIGRATIONS % "index:all_projects"
INDEX_HOST = MIGRATIONS % "index:host"

_OPERATIONS = [{"method": "GET", "path": "/os-migrations"}]

_RULES = [
    policy.DocumentedRuleDefault(
        name=INDEX,
        check_str=base.PROJECT_MANAGER_OR_ADMIN,
        description="List migrations. A caller that index:all_projects refuses "
        "must filter by its own project (project_id=...), else gets 403.",
        operations=_OPERATIONS,
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=INDEX_ALL_PROJECTS,
        check_str=base.ADMIN,
        description="List the migrations of every project, or of another project.",
        operations=_OPERATIONS,
        scope_types=["project"],
    ),
    policy.DocumentedRuleDefault(
        name=INDEX_HOST,
        check_str=base.ADMIN,
        description="Show where migrations run: source_compute, source_node, "
        "dest_compute, dest_node and dest_host (null without this rule).",
        operations=_OPERATIONS,
        scope_types=["project"],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of os-migrations."""
    return list(_RULES)
