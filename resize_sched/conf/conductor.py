"""Options of the ``[conductor]`` group."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "conductor",
    title="Conductor options",
    help="The conductor daemon, which runs build and resize task flows.",
)

OPTS = [
    cfg.IntOpt(
        "workers",
        min=1,
        sample_default="<number of CPUs>",
        help="Conductor worker processes, each an RPC server on the same topic "
        "sharing the broker and the database. Defaults to the number of CPUs. "
        "Raise it when resizes queue up; each worker holds its own Placement and "
        "database connections.",
    ),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts() -> dict[cfg.OptGroup, list[cfg.Opt]]:
    return {GROUP: OPTS}
