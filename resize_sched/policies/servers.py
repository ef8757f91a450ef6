"""Rules of ``/servers`` and the resize actions, and of the admin-only fields.

The target of a rule on one server is that server's project (and user); a
listing's target is the caller's own project.
"""

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
UPDATE = SERVERS % "update"
STOP = SERVERS % "stop"
START = SERVERS % "start"
RESET_STATE = "os_compute_api:os-admin-actions:reset_state"
EXTENDED_ATTRIBUTES = "os_compute_api:os-extended-server-attributes"

_LIST = ("GET /servers", "GET /servers/detail")
#: Where a server is shown with its fields: show, list with details, and
#: the answer to an update.
_SHOWN = ("GET /servers/{server_id}", "GET /servers/detail", "PUT /servers/{server_id}")

RULES = [
    base.rule(
        INDEX,
        base.PROJECT_READER_OR_ADMIN,
        "List the servers of the caller's project.",
        "GET /servers",
    ),
    base.rule(
        DETAIL,
        base.PROJECT_READER_OR_ADMIN,
        "List the servers of the caller's project, every field.",
        "GET /servers/detail",
    ),
    base.rule(
        INDEX_ALL_TENANTS,
        base.ADMIN,
        "List servers of every project (all_tenants=true, optionally with "
        "project_id); refused with 403 otherwise.",
        "GET /servers",
    ),
    base.rule(
        DETAIL_ALL_TENANTS,
        base.ADMIN,
        "List servers of every project with every field (all_tenants=true).",
        "GET /servers/detail",
    ),
    base.rule(
        ALLOW_ALL_FILTERS,
        base.ADMIN,
        "Filter server lists by what only operators should see (host). A "
        "caller this rule refuses and who filters by host gets 403.",
        *_LIST,
    ),
    base.rule(
        SHOW,
        base.PROJECT_READER_OR_ADMIN,
        "Show a server. Another project's server is not found (404) unless the "
        "caller is an administrator (context_is_admin), whatever this rule says.",
        "GET /servers/{server_id}",
    ),
    base.rule(
        SHOW_HOST_STATUS,
        base.ADMIN,
        "Include host_status (microversion 2.16 and later) when showing or "
        "listing servers with details.",
        *_SHOWN,
    ),
    base.rule(
        SHOW_FLAVOR_EXTRA_SPECS,
        base.PROJECT_READER_OR_ADMIN,
        "Include the flavor's extra specs in a server's embedded flavor "
        "(microversion 2.47 and later).",
        *_SHOWN,
    ),
    base.rule(
        EXTENDED_ATTRIBUTES,
        base.ADMIN,
        "Include the OS-EXT-SRV-ATTR:* fields (host, hypervisor_hostname, "
        "instance_name; the others from microversion 2.3) when showing or "
        "listing servers with details.",
        *_SHOWN,
    ),
    base.rule(
        CREATE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Create a server in the caller's project.",
        "POST /servers",
    ),
    base.rule(
        DELETE, base.PROJECT_MEMBER_OR_ADMIN, "Delete a server.", "DELETE /servers/{server_id}"
    ),
    base.rule(
        RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Resize a server (the claim strategy is the deployment's [resize] claim_strategy).",
        "POST /servers/{server_id}/action (resize)",
    ),
    base.rule(
        CONFIRM_RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Confirm a server's resize.",
        "POST /servers/{server_id}/action (confirmResize)",
    ),
    base.rule(
        REVERT_RESIZE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Revert a server's resize.",
        "POST /servers/{server_id}/action (revertResize)",
    ),
    base.rule(
        UPDATE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Update a server's name, access addresses or description.",
        "PUT /servers/{server_id}",
    ),
    base.rule(
        STOP,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Stop (power off) a server.",
        "POST /servers/{server_id}/action (os-stop)",
    ),
    base.rule(
        START,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Start (power on) a stopped server.",
        "POST /servers/{server_id}/action (os-start)",
    ),
    base.rule(
        RESET_STATE,
        base.ADMIN,
        "Reset a server's state to active or error, whatever it is doing.",
        "POST /servers/{server_id}/action (os-resetState)",
    ),
]
