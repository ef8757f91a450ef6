"""Feed oslo-config-generator (the ``oslo.config.opts`` entry point)."""

from oslo_config import cfg

from resize_sched import conf


def list_opts() -> list[tuple[str | cfg.OptGroup | None, list[cfg.Opt]]]:
    """Return every resize_sched option, grouped, for the sample config."""
    merged: dict[str, tuple[str | cfg.OptGroup | None, list[cfg.Opt]]] = {}
    for module in conf._MODULES:
        for group, opts in module.list_opts().items():
            key = group.name if isinstance(group, cfg.OptGroup) else str(group)
            entry = merged.setdefault(key, (group, []))
            entry[1].extend(opts)
    return list(merged.values())
