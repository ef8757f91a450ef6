"""Rules of quotas (os-quota-sets, os-quota-class-sets), limits, key pairs
and flavor access, with Nova's names and defaults."""

from resize_sched.policies import base

QUOTA_SETS = "os_compute_api:os-quota-sets:%s"
QUOTA_CLASS_SETS = "os_compute_api:os-quota-class-sets:%s"
KEYPAIRS = "os_compute_api:os-keypairs:%s"

QUOTA_SHOW = QUOTA_SETS % "show"
QUOTA_UPDATE = QUOTA_SETS % "update"
QUOTA_DEFAULTS = QUOTA_SETS % "defaults"
QUOTA_DETAIL = QUOTA_SETS % "detail"
QUOTA_DELETE = QUOTA_SETS % "delete"
QUOTA_CLASS_SHOW = QUOTA_CLASS_SETS % "show"
QUOTA_CLASS_UPDATE = QUOTA_CLASS_SETS % "update"
LIMITS = "os_compute_api:limits"
LIMITS_OTHER_PROJECT = "os_compute_api:limits:other_project"
KEYPAIRS_INDEX = KEYPAIRS % "index"
KEYPAIRS_SHOW = KEYPAIRS % "show"
KEYPAIRS_CREATE = KEYPAIRS % "create"
KEYPAIRS_DELETE = KEYPAIRS % "delete"
FLAVOR_ACCESS = "os_compute_api:os-flavor-access"
FLAVOR_ACCESS_ADD = FLAVOR_ACCESS + ":add_tenant_access"
FLAVOR_ACCESS_REMOVE = FLAVOR_ACCESS + ":remove_tenant_access"

#: Nova's key pair rule: an administrator, or the key pair's own user.
ADMIN_OR_OWNER = "(rule:context_is_admin) or user_id:%(user_id)s"
#: Anyone with a token, whatever their roles (Nova's "@"; a token without a
#: project is refused before any rule, see resize_sched.api.auth).
ANYONE = base.RULE_ANY

_QUOTA = "/os-quota-sets/{tenant_id}"
_CLASS = "/os-quota-class-sets/{quota_class}"
_ACCESS = "/flavors/{flavor_id}/os-flavor-access"

RULES = [
    base.rule(
        QUOTA_SHOW, base.PROJECT_READER_OR_ADMIN, "Show a project's quota.", f"GET {_QUOTA}"
    ),
    base.rule(QUOTA_UPDATE, base.ADMIN, "Set a project's (or a user's) quota.", f"PUT {_QUOTA}"),
    base.rule(QUOTA_DEFAULTS, ANYONE, "Show the default quota.", f"GET {_QUOTA}/defaults"),
    base.rule(
        QUOTA_DETAIL,
        base.PROJECT_READER_OR_ADMIN,
        "Show a project's quota with what it uses.",
        f"GET {_QUOTA}/detail",
    ),
    base.rule(
        QUOTA_DELETE,
        base.ADMIN,
        "Remove a project's (or a user's) quota: the defaults apply again.",
        f"DELETE {_QUOTA}",
    ),
    base.rule(QUOTA_CLASS_SHOW, base.ADMIN, "Show a quota class.", f"GET {_CLASS}"),
    base.rule(
        QUOTA_CLASS_UPDATE,
        base.ADMIN,
        "Set a quota class (the class 'default' is every project's default).",
        f"PUT {_CLASS}",
    ),
    base.rule(LIMITS, ANYONE, "Show the caller's project's limits and usage.", "GET /limits"),
    base.rule(
        LIMITS_OTHER_PROJECT,
        base.ADMIN,
        "Show another project's limits (the tenant_id query parameter).",
        "GET /limits",
    ),
    base.rule(KEYPAIRS_INDEX, ADMIN_OR_OWNER, "List a user's key pairs.", "GET /os-keypairs"),
    base.rule(
        KEYPAIRS_SHOW,
        ADMIN_OR_OWNER,
        "Show a user's key pair.",
        "GET /os-keypairs/{keypair_name}",
    ),
    base.rule(
        KEYPAIRS_CREATE, ADMIN_OR_OWNER, "Create or import a key pair.", "POST /os-keypairs"
    ),
    base.rule(
        KEYPAIRS_DELETE,
        ADMIN_OR_OWNER,
        "Delete a user's key pair.",
        "DELETE /os-keypairs/{keypair_name}",
    ),
    base.rule(
        FLAVOR_ACCESS, base.ADMIN, "List the projects a flavor is shared with.", f"GET {_ACCESS}"
    ),
    base.rule(
        FLAVOR_ACCESS_ADD,
        base.ADMIN,
        "Share a private flavor with a project.",
        "POST /flavors/{flavor_id}/action (addTenantAccess)",
    ),
    base.rule(
        FLAVOR_ACCESS_REMOVE,
        base.ADMIN,
        "Stop sharing a private flavor with a project.",
        "POST /flavors/{flavor_id}/action (removeTenantAccess)",
    ),
]
