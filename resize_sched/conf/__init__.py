"""Configuration options, one module per option group.

Nothing here touches a global ``ConfigOpts``: callers hand in the one they own
(a daemon's, a test's), and :func:`register_opts` puts every group on it.
"""

import copy
import importlib
from collections.abc import Sequence
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.version import version_string

#: One module per option group, ``[DEFAULT]`` first. A module declares its
#: ``GROUP`` and ``OPTS``; one that registers more (keystoneauth's options,
#: ``[DEFAULT]``) has its own ``register_opts`` and ``list_opts``.
_MODULES = tuple(
    importlib.import_module(f"resize_sched.conf.{name}")
    for name in (
        "default",
        "all_in_one",
        "api",
        "compute",
        "conductor",
        "database",
        "fake_driver",
        "filter_scheduler",
        "glance",
        "placement",
        "quota",
        "resize",
        "scheduler",
        "upgrade_levels",
        "wsgi",
    )
)


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register every resize_sched option group on ``conf``."""
    for module in _MODULES:
        if hasattr(module, "register_opts"):
            module.register_opts(conf)
        else:
            # NOTE: a copy of the group per ConfigOpts: oslo.config keeps
            # overrides in the group object, so a shared module-level group
            # would leak them between configs (two daemons in one test).
            conf.register_group(copy.deepcopy(module.GROUP))
            conf.register_opts(module.OPTS, group=module.GROUP.name)


def module_opts(module: Any) -> dict[Any, list[cfg.Opt]]:
    """One option module's groups and options, for the sample config: its
    ``list_opts()`` where it has one, else its ``GROUP`` and ``OPTS``."""
    if hasattr(module, "list_opts"):
        return module.list_opts()
    return {module.GROUP: module.OPTS}


def new_conf() -> cfg.ConfigOpts:
    """Return a fresh ``ConfigOpts`` with all our options registered.

    oslo.log's options are registered too, so the result can be handed to
    ``logging.setup``.
    """
    conf = cfg.ConfigOpts()
    logging.register_options(conf)
    register_opts(conf)
    return conf


def parse_args(
    conf: cfg.ConfigOpts,
    argv: Sequence[str],
    *,
    description: str | None = None,
    default_config_files: Sequence[str] | None = None,
    prog: str | None = None,
) -> None:
    """Parse the command line and config files into ``conf``.

    :param conf: a ``ConfigOpts`` made by :func:`new_conf`.
    :param argv: the arguments, without the program name.
    :param description: the text ``--help`` shows above the options.
    :param default_config_files: files read when no ``--config-file`` is given.
    :param prog: the program name ``--help`` shows (default: from ``sys.argv``).
    """
    conf(
        list(argv),
        project="resize_sched",
        version=version_string(),
        description=description,
        default_config_files=default_config_files,
        prog=prog,
    )
