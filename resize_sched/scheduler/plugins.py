"""Loading filters and weighers by name from their entry-point namespaces.

Both are found as claim strategies are (stevedore, by entry-point name), so a
third-party one installed in the same environment is named in
``[filter_scheduler] enabled_filters`` or ``weight_classes`` like ours.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from oslo_log import log as logging
from stevedore import extension

from resize_sched import exception

if TYPE_CHECKING:
    from oslo_config import cfg

    from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

FILTERS = "resize_sched.scheduler.filters"
WEIGHERS = "resize_sched.scheduler.weights"

_WHAT = {FILTERS: ("filter", "enabled_filters"), WEIGHERS: ("weigher", "weight_classes")}


class Plugin:
    """What a filter and a weigher share: the facts they need, the
    configuration they read their options from, their name.

    :cvar needs: the extra facts its host states must carry
        (:data:`~resize_sched.scheduler.host_state.AGGREGATES`,
        :data:`~resize_sched.scheduler.host_state.SERVERS`); read once for all
        candidates, only when an enabled filter or weigher needs them.
    """

    needs: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.conf: cfg.ConfigOpts | None = None

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        """What :attr:`needs` holds that ``request`` makes it read (all of it
        by default; a group or hint plug-in needs nothing without its group
        or hint)."""
        return self.needs

    def configure(self, conf: cfg.ConfigOpts) -> None:
        """Keep the configuration (options are read at each request)."""
        self.conf = conf

    @property
    def name(self) -> str:
        return type(self).__name__


def installed(namespace: str) -> list[str]:
    """The names that load in ``namespace``, sorted."""
    return sorted(extension.ExtensionManager(namespace, invoke_on_load=False).names())


def load(namespace: str, names: Iterable[str], base: type) -> list[Any]:
    """Instantiate the plug-ins called ``names``, in that order.

    :raises SchedulerPluginNotFound: a name is not installed (the message
        names it and lists those that are).
    :raises SchedulerPluginLoadFailed: one failed to import or is not a ``base``.
    """
    what, option = _WHAT[namespace]
    manager = extension.ExtensionManager(namespace, invoke_on_load=False)
    by_name: dict[str, list[Any]] = {}
    for ext in manager.extensions:
        by_name.setdefault(ext.name, []).append(ext)
    out = []
    for name in names:
        found = by_name.get(name)
        if not found:
            # NOTE: an entry point that failed to import is not an extension
            # of the manager: tell it from one that is not there at all.
            if _declared(namespace, name):
                raise exception.SchedulerPluginLoadFailed(
                    what=what, name=name, reason="its module failed to import (see the log)"
                )
            raise exception.SchedulerPluginNotFound(
                what=what,
                option=option,
                name=name,
                installed=", ".join(sorted(by_name)) or "none",
            )
        if len(found) > 1:
            raise exception.SchedulerPluginLoadFailed(
                what=what, name=name, reason="several entry points have this name"
            )
        cls = found[0].plugin
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise exception.SchedulerPluginLoadFailed(
                what=what, name=name, reason=f"{cls!r} is not a {base.__name__}"
            )
        out.append(cls())
    LOG.debug("Loaded %ss %s", what, [type(p).__name__ for p in out])
    return out


def load_configured(
    namespace: str, names: Iterable[str], base: type, conf: cfg.ConfigOpts
) -> list[Any]:
    """:func:`load`, each plug-in then given ``conf`` (a chain's members).

    :raises SchedulerPluginNotFound, SchedulerPluginLoadFailed: as :func:`load`.
    """
    loaded = load(namespace, names, base)
    for plugin in loaded:
        plugin.configure(conf)
    return loaded


def _declared(namespace: str, name: str) -> bool:
    from importlib import metadata

    return any(ep.name == name for ep in metadata.entry_points(group=namespace))
