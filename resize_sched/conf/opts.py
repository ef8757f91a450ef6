"""Feed oslo-config-generator (the ``oslo.config.opts`` and ``oslo.config.opts.defaults``
entry points)."""

from oslo_config import cfg

from resize_sched import conf


def list_opts() -> list[tuple[str | cfg.OptGroup | None, list[cfg.Opt]]]:
    """Return every resize_sched option, grouped, for the sample config."""
    merged: dict[str, tuple[str | cfg.OptGroup | None, list[cfg.Opt]]] = {}
    for module in conf._MODULES:
        for group, opts in conf.module_opts(module).items():
            key = group.name if isinstance(group, cfg.OptGroup) else str(group)
            entry = merged.setdefault(key, (group, []))
            entry[1].extend(opts)
    return list(merged.values())


def set_defaults() -> None:
    """Show our defaults for other libraries' options in the sample config.

    ``[oslo_messaging_notifications]`` and, when keystonemiddleware is
    installed, ``[keystone_authtoken]``. NOTE: this changes those libraries'
    option objects for the whole process; only the generator calls it.
    """
    from resize_sched import rpc

    rpc.set_notification_defaults()
    try:
        from resize_sched.api import keystone
    except ImportError:
        return
    keystone.set_defaults()
