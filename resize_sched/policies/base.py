"""The building blocks the API rules are written with.

As in Nova and Keystone's default roles: ``reader`` reads, ``member`` also
changes its project's resources, ``manager`` also sees some project-wide
operational data, ``admin`` may do everything in every project. Keystone puts
the implied roles in the token (an ``admin`` also holds ``member`` and
``reader``; a ``member`` also holds ``reader``), so each rule names only the
least role it needs.

Every rule, these building blocks included, is project-scoped
(``scope_types = ['project']``), as every rule of Nova's Compute API is:
with ``[oslo_policy] enforce_scope`` (the default) oslo.policy refuses a
token scoped to a domain or to the system, and the API refuses a caller
without a project before any rule (see :mod:`resize_sched.api.auth`).
"""

from oslo_policy import policy

#: The scope of every rule: a project's resources.
SCOPE_TYPES = ["project"]

#: Check strings of the API rules.
ADMIN = "rule:context_is_admin"
PROJECT_MANAGER_OR_ADMIN = "rule:project_manager_or_admin"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"

RULES = [
    policy.RuleDefault(
        "context_is_admin",
        "role:admin",
        description="Who is an administrator: may see and act on every project's "
        "servers, private flavors and migrations. Only a project-scoped token can be.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_manager_api",
        "role:manager and project_id:%(project_id)s",
        description="A manager of the project owning the resource.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_member_api",
        "role:member and project_id:%(project_id)s",
        description="A member of the project owning the resource.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        description="A reader of the project owning the resource.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_manager_or_admin",
        "rule:project_manager_api or rule:context_is_admin",
        description="The project's managers, or an administrator.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_member_or_admin",
        "rule:project_member_api or rule:context_is_admin",
        description="The project's members, or an administrator.",
        scope_types=SCOPE_TYPES,
    ),
    policy.RuleDefault(
        "project_reader_or_admin",
        "rule:project_reader_api or rule:context_is_admin",
        description="The project's readers, or an administrator.",
        scope_types=SCOPE_TYPES,
    ),
]


def rule(
    name: str, check_str: str, description: str, *operations: str
) -> policy.DocumentedRuleDefault:
    """A project-scoped API rule; each operation is ``"METHOD /path"``."""
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=[dict(zip(("method", "path"), op.split(" ", 1))) for op in operations],
        scope_types=SCOPE_TYPES,
    )
