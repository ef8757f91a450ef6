"""The building blocks the API rules are written with: Nova's base rules.

As in Nova and Keystone's default roles: ``reader`` reads, ``member`` also
changes its project's resources, ``manager`` also runs some of its project's
operations (migrations without a named host, and their listing), ``admin``
may do everything in every project. Keystone puts the implied roles in the
token (an ``admin`` also holds ``manager``, ``member`` and ``reader``; a
``manager`` also ``member`` and ``reader``), so each rule names only the
least role it needs.

The base rules are Nova's, name for name and check string for check string,
the two Nova deprecated long ago (``admin_or_owner``, ``admin_api``) and the
service ones included, so that a ``policy.yaml`` written for Nova and
referring to them means the same thing here. As in Nova they carry no scope
of their own; every API rule is project-scoped (``scope_types =
['project']``): with ``[oslo_policy] enforce_scope`` (the default)
oslo.policy refuses a token scoped to a domain or to the system, and the API
refuses a caller without a project before any rule (see
:mod:`resize_sched.api.auth`).
"""

from oslo_policy import policy

#: The scope of every API rule: a project's resources.
SCOPE_TYPES = ["project"]

#: Check strings of the API rules (Nova's aliases).
ADMIN = "rule:context_is_admin"
PROJECT_MANAGER_OR_ADMIN = "rule:project_manager_or_admin"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
#: Anyone with a (project-scoped) token.
RULE_ANY = "@"
#: Nobody at all.
RULE_NOBODY = "!"

_OLD_DEFAULTS = (
    "Nova's first defaults, before the reader, member and manager roles and "
    "scope types. A policy file that still overrides them is honoured as Nova honours it."
)
_OLD_ADMIN = policy.DeprecatedRule(
    "admin_api", "is_admin:True", deprecated_reason=_OLD_DEFAULTS, deprecated_since="21.0.0"
)
_OLD_ADMIN_OR_OWNER = policy.DeprecatedRule(
    "admin_or_owner",
    "is_admin:True or project_id:%(project_id)s",
    deprecated_reason=_OLD_DEFAULTS,
    deprecated_since="21.0.0",
)


def _base(name: str, check_str: str, description: str, **kwargs: object) -> policy.RuleDefault:
    return policy.RuleDefault(name, check_str, description=description, **kwargs)  # type: ignore[arg-type]


RULES = [
    _base(
        "context_is_admin",
        "role:admin",
        "Who is an administrator: may see and act on every project's servers, "
        "private flavors and migrations. Only a project-scoped token can be.",
        deprecated_rule=_OLD_ADMIN,
    ),
    _base(
        "admin_or_owner",
        "is_admin:True or project_id:%(project_id)s",
        "Nova's old default of most project APIs; no rule here uses it.",
        deprecated_for_removal=True,
        deprecated_reason=_OLD_DEFAULTS,
        deprecated_since="21.0.0",
    ),
    _base(
        "admin_api",
        "is_admin:True",
        "Nova's old default of the administrators' APIs; no rule here uses it.",
        deprecated_for_removal=True,
        deprecated_reason=_OLD_DEFAULTS,
        deprecated_since="21.0.0",
    ),
    _base(
        "project_manager_api",
        "role:manager and project_id:%(project_id)s",
        "A manager of the project owning the resource.",
        deprecated_rule=_OLD_ADMIN,
    ),
    _base(
        "project_member_api",
        "role:member and project_id:%(project_id)s",
        "A member of the project owning the resource.",
        deprecated_rule=_OLD_ADMIN_OR_OWNER,
    ),
    _base(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        "A reader of the project owning the resource.",
        deprecated_rule=_OLD_ADMIN_OR_OWNER,
    ),
    _base(
        "service_api",
        "role:service",
        "Another service's user (Nova's service-to-service APIs; none is served here).",
        deprecated_rule=_OLD_ADMIN,
    ),
    _base(
        "project_manager_or_admin",
        "rule:project_manager_api or rule:context_is_admin",
        "The project's managers, or an administrator.",
        deprecated_rule=_OLD_ADMIN,
    ),
    _base(
        "project_member_or_admin",
        "rule:project_member_api or rule:context_is_admin",
        "The project's members, or an administrator.",
        deprecated_rule=_OLD_ADMIN_OR_OWNER,
    ),
    _base(
        "project_reader_or_admin",
        "rule:project_reader_api or rule:context_is_admin",
        "The project's readers, or an administrator.",
        deprecated_rule=_OLD_ADMIN_OR_OWNER,
    ),
    _base(
        "service_or_admin",
        "rule:service_api or rule:context_is_admin",
        "Another service's user, or an administrator.",
        deprecated_rule=_OLD_ADMIN,
    ),
]


def operations(*operations: str) -> list[dict[str, str]]:
    """Operations as oslo.policy lists them; each is ``"METHOD /path"``."""
    return [dict(zip(("method", "path"), op.split(" ", 1), strict=True)) for op in operations]


def rule(
    name: str,
    check_str: str,
    description: str,
    *ops: str,
    deprecated_rule: policy.DeprecatedRule | None = None,
) -> policy.DocumentedRuleDefault:
    """A project-scoped API rule; each operation is ``"METHOD /path"``.

    :param deprecated_rule: the rule this one replaces, as Nova names it.
    """
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=operations(*ops),
        scope_types=SCOPE_TYPES,
        deprecated_rule=deprecated_rule,
    )
