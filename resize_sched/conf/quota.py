"""Options of the ``[quota]`` group: every project's default limits."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "quota",
    title="Quota options",
    help="The limits every project has until an administrator sets its own "
    "(os-quota-sets) or changes the default class (os-quota-class-sets). -1 is "
    "unlimited.",
)

OPTS = [
    cfg.StrOpt(
        "driver",
        default="db",
        choices=[
            ("db", "limits and overrides in our database; usage counted from it"),
            ("noop", "no limit is ever enforced"),
            (
                "unified_limits",
                "limits from Keystone's registered and project limits (oslo.limit, "
                "configured in [oslo_limit]); usage counted from our database",
            ),
        ],
        help="Where limits come from: 'db' (os-quota-sets, os-quota-class-sets "
        "and these defaults), 'noop' to enforce none (the API still answers "
        "with the limits set), or 'unified_limits' for Keystone's limits on "
        "the endpoint [oslo_limit] names, under Nova's resource names "
        "(servers, class:VCPU, class:MEMORY_MB, server_metadata_items, "
        "server_key_pairs, server_groups, server_group_members, "
        "server_injected_files...). With unified_limits the options below, "
        "os-quota-sets and os-quota-class-sets are not used: an update is "
        "accepted and changes nothing, as in Nova.",
    ),
    cfg.IntOpt("instances", default=10, min=-1, help="Servers per project."),
    cfg.IntOpt("cores", default=20, min=-1, help="Virtual CPUs per project, by flavor."),
    cfg.IntOpt("ram", default=50 * 1024, min=-1, help="Memory (MiB) per project, by flavor."),
    cfg.IntOpt("metadata_items", default=128, min=-1, help="Metadata pairs on one server."),
    cfg.IntOpt("key_pairs", default=100, min=-1, help="Key pairs per user."),
    cfg.IntOpt("server_groups", default=10, min=-1, help="Server groups per project."),
    cfg.IntOpt("server_group_members", default=10, min=-1, help="Servers in one server group."),
    cfg.IntOpt(
        "injected_files",
        default=5,
        min=-1,
        help="Files injected into a server (Nova's personality), shown by "
        "os-quota-sets and /limits below microversion 2.57 only: nothing is "
        "injected here.",
    ),
    cfg.IntOpt(
        "injected_file_content_bytes",
        default=10 * 1024,
        min=-1,
        help="Bytes in one injected file; shown below microversion 2.57 only.",
    ),
    cfg.IntOpt(
        "injected_file_path_length",
        default=255,
        min=-1,
        help="Characters in an injected file's path (the resource "
        "injected_file_path_bytes); shown below microversion 2.57 only.",
    ),
]


#: oslo.limit's own group, read by ``[quota] driver = unified_limits``.
OSLO_LIMIT_GROUP = "oslo_limit"


def register_oslo_limit_opts(conf: cfg.ConfigOpts) -> None:
    """Register oslo.limit's ``[oslo_limit]`` options on ``conf`` (safe to repeat).

    The endpoint's (``endpoint_id``...), keystoneauth's session, adapter and
    ``auth_type`` options, and those of the ``auth_type`` plugin ``conf``
    names. The sample config lists them through oslo.limit's own
    ``oslo.limit`` namespace, as Nova's does.
    """
    from keystoneauth1 import loading
    from oslo_limit import opts as limit_opts

    endpoint = [
        opt
        for _group, opts in limit_opts.list_opts()
        for opt in opts
        if opt.dest.startswith("endpoint_")
    ]
    conf.register_opts(endpoint, group=OSLO_LIMIT_GROUP)
    loading.register_session_conf_options(conf, OSLO_LIMIT_GROUP)
    loading.register_adapter_conf_options(conf, OSLO_LIMIT_GROUP, include_deprecated=False)
    loading.register_auth_conf_options(conf, OSLO_LIMIT_GROUP)
    plugin = conf[OSLO_LIMIT_GROUP].auth_type
    if plugin:
        conf.register_opts(loading.get_auth_plugin_conf_options(plugin), group=OSLO_LIMIT_GROUP)
