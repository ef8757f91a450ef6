"""Rules of ``GET /os-migrations``.

Three rules, as in Nova: ``index`` lets a caller list at all; listing
anything beyond the caller's own project (no ``project_id`` filter, or
another project's) also needs ``index:all_projects``; without
``index:host`` the host and node fields are null.
"""

from resize_sched.policies import base

MIGRATIONS = "os_compute_api:os-migrations:%s"

INDEX = MIGRATIONS % "index"
INDEX_ALL_PROJECTS = MIGRATIONS % "index:all_projects"
INDEX_HOST = MIGRATIONS % "index:host"

_LIST = "GET /os-migrations"

RULES = [
    base.rule(
        INDEX,
        base.PROJECT_MANAGER_OR_ADMIN,
        "List migrations. A caller that index:all_projects refuses "
        "must filter by its own project (project_id=...), else gets 403.",
        _LIST,
    ),
    base.rule(
        INDEX_ALL_PROJECTS,
        base.ADMIN,
        "List the migrations of every project, or of another project.",
        _LIST,
    ),
    base.rule(
        INDEX_HOST,
        base.ADMIN,
        "Show where migrations run: source_compute, source_node, "
        "dest_compute, dest_node and dest_host (null without this rule).",
        _LIST,
    ),
]
