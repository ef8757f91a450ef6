"""Options of the ``[api]`` group: the Compute API subset."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "api",
    title="API service options",
    help="The HTTP service serving the Compute API v2.1 subset (flavors, servers, "
    "resize actions, os-migrations).",
)

OPTS = [
    cfg.HostAddressOpt(
        "bind_host",
        default="0.0.0.0",
        help="Address the API service listens on. Use 127.0.0.1 to keep it local.",
    ),
    cfg.PortOpt(
        "bind_port",
        default=8774,
        help="TCP port the API service listens on (8774 is the Compute API's usual port).",
    ),
    cfg.StrOpt(
        "auth_strategy",
        default="keystone",
        choices=[
            (
                "keystone",
                "Validate tokens with Keystone: keystonemiddleware's auth_token, "
                "configured in [keystone_authtoken] (install the 'keystone' extra).",
            ),
            (
                "noauth2",
                "No authentication: the X-Auth-Token header is USER:PROJECT and the user "
                "'admin' is an administrator. For tests and the all-in-one only.",
            ),
        ],
        help="How API requests are authenticated. What an authenticated caller may do "
        "is decided by the policy rules (Nova's names and defaults, overridable in "
        "[oslo_policy] policy_file; see etc/resize_sched/policy.yaml.sample).",
    ),
    cfg.URIOpt(
        "compute_link_prefix",
        schemes=["http", "https"],
        help="The URL the API's links start with (self and bookmark links, Location "
        "headers, next links, the version documents), e.g. "
        "https://compute.example.com:8774 or https://cloud.example.com/compute. Set "
        "it in production: unset, links are built from the request's Host header, "
        "which any client chooses (and [oslo_middleware] enable_proxy_headers_parsing "
        "from X-Forwarded-Host). The path of the request (/v2.1/...) is appended to "
        "it, as Nova does with its option of the same name.",
    ),
    cfg.BoolOpt(
        "enable_instance_password",
        default=True,
        help="Return the server's administrator password (adminPass) in the answer to "
        "a server create: the one the caller gave, or one generated. As Nova's option "
        "of the same name; the password is never stored (there is no guest to set it "
        "in: the compute service drives a fake hypervisor).",
    ),
]
