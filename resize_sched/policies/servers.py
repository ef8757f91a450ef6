"""Rules of ``/servers`` and the resize actions, and of the admin-only fields.

The target of a rule on one server is that server's project (and user); a
listing's target is the caller's own project.
"""

from oslo_policy import policy

from resize_sched.policies import base

SERVERS = "os_compute_api:servers:%s"

INDEX = SERVERS % "index"
DETAIL = SERVERS % "detail"
INDEX_ALL_TENANTS = SERVERS % "index:get_all_tenants"
DETAIL_ALL_TENANTS = SERVERS % "detail:get_all_tenants"
ALLOW_ALL_FILTERS = SERVERS % "allow_all_filters"
SHOW = SERVERS % "show"
SHOW_HOST_STATUS = SERVERS % "show:host_status"
SHOW_FLAVOR_EXTRA_SPECS = SERVERS % "show:flavor-extra-specs"
CREATE = SERVERS % "create"
DELETE = SERVERS % "delete"
RESIZE = SERVERS % "resize"
CONFIRM_RESIZE = SERVERS % "confirm_resize"
REVERT_RESIZE = SERVERS % "revert_resize"
EXTENDED_ATTRIBUTES = "os_compute_api:os-extended-server-attributes"

_LIST = [{"method": "GET", "path": "/servers"}, {"method": "GET", "path": "/servers/detail"}]
_SHOWN = [
    {"method": "GET", "path": "/servers/{server_id}"},
    {"method": "GET", "path": "/servers/detail"},
]


def _rule(
    name: str, check_str: str, description: str, operations: list[dict[str, str]]
) -> policy.DocumentedRuleDefault:
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=operations,
        scope_types=["project"],
    )


_RULES = [
    _rule(
        INDEX,
        base.PROJECT_READER_OR_ADMIN,
        "List the servers of the caller's project.",
        [{"method": "GET", "path": "/servers"}],
    ),
    _rule(
        DETAIL,
        base.PROJECT_READER_OR_ADMIN,
        "List the servers of the caller's project, every field.",
        [{"method": "GET", "path": "/servers/detail"}],
    ),
    _rule(
        INDEX_ALL_TENANTS,
        base.ADMIN,
        "List servers of every project (all_tenants=true, optionally with "
        "project_id); refused with 403 otherwise.",
        [{"method": "GET", "path": "/servers"}],
    ),
    _rule(
        DETAIL_ALL_TENANTS,
        base.ADMIN,
        "List servers of every project with every field (all_tenants=true).",
        [{"method": "GET", "path": "/servers/detail"}],
    ),
    _rule(
        ALLOW_ALL_FILTERS,
        base.ADMIN,
        "Filter server lists by what only operators should see (host). A "
        "caller this rule refuses and who filters by host gets 403.",
        _LIST,
    ),
    _rule(
        SHOW,
        base.PROJECT_READER_OR_ADMIN,
        "Show a server. Another project's server is not found (404) unless the "
        "caller is an administrator (context_is_admin), whatever this rule says.",
        [{"method": "GET", "path": "/servers/{server_id}"}],
    ),
    _rule(
        SHOW_HOST_STATUS,
        base.ADMIN,
        "Include host_status (microversion 2.16 and later) when showing or "
        "listing servers with details.",
        _SHOWN,
    ),
    _rule(
        SHOW_FLAVOR_EXTRA_SPECS,
        base.PROJECT_READER_OR_ADMIN,
        "Include the flavor's extra specs in a server's embedded flavor "
        "(microversion 2.47 and later).",
        _SHOWN,
    ),
    _rule(
        EXTENDED_ATTRIBUTES,
        base.ADMIN,
        "Include the OS-EXT-SRV-ATTR:* fields (host, hypervisor_hostname, "
        "instance_name; the others from microversion 2.3) when showing or "
        "listing servers with details.",
        _SHOWN,
    ),
    _rule(
        CREATE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Create a server in the caller's project.",
        [{"method": "POST", "path": "/servers"}],
    ),
    _rule(
        DELETE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Delete a server.",
        [{"method": "DELETE", "path": "/servers/{server_id}"}],
    ),
    _rule(
        RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Resize a server (the claim strategy is the deployment's [resize] claim_strategy).",
        [{"method": "POST", "path": "/servers/{server_id}/action (resize)"}],
    ),
    _rule(
        CONFIRM_RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Confirm a server's resize.",
        [{"method": "POST", "path": "/servers/{server_id}/action (confirmResize)"}],
    ),
    _rule(
        REVERT_RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Revert a server's resize.",
        [{"method": "POST", "path": "/servers/{server_id}/action (revertResize)"}],
    ),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of servers and their resize actions."""
    return list(_RULES)
