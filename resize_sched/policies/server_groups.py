"""Rules of server groups (``/os-server-groups``), with Nova's names and defaults.

A project's readers list and show its groups, its members (or an
administrator) create them, in the caller's own project, and delete them;
only an administrator lists every project's (``all_projects``).
"""

from resize_sched.policies import base

ROOT = "os_compute_api:os-server-groups:%s"

CREATE = ROOT % "create"
DELETE = ROOT % "delete"
INDEX = ROOT % "index"
INDEX_ALL_PROJECTS = ROOT % "index:all_projects"
SHOW = ROOT % "show"

_ONE = "/os-server-groups/{server_group_id}"

RULES = [
    base.rule(
        CREATE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Create a server group in the caller's project.",
        "POST /os-server-groups",
    ),
    base.rule(
        DELETE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Delete a server group (its members stay, in no group).",
        f"DELETE {_ONE}",
    ),
    base.rule(
        INDEX,
        base.PROJECT_READER_OR_ADMIN,
        "List the server groups of the caller's project.",
        "GET /os-server-groups",
    ),
    base.rule(
        INDEX_ALL_PROJECTS,
        base.ADMIN,
        "List every project's server groups (all_projects).",
        "GET /os-server-groups",
    ),
    base.rule(SHOW, base.PROJECT_READER_OR_ADMIN, "Show a server group.", f"GET {_ONE}"),
]
