"""Options of the ``[quota]`` group: every project's default limits."""

import copy

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
        ],
        help="Where limits come from: 'db' (os-quota-sets, os-quota-class-sets "
        "and these defaults), or 'noop' to enforce none (the API still "
        "answers with the limits set).",
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


def register_opts(conf: cfg.ConfigOpts) -> None:
    # NOTE: a copy per ConfigOpts, as in scheduler.py.
    conf.register_group(copy.deepcopy(GROUP))
    conf.register_opts(OPTS, group=GROUP.name)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS}
