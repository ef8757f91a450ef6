"""Loading claim strategies by name, from the ``resize_sched.claim_strategies`` entry points.

An unknown name fails with :class:`~resize_sched.exception.StrategyNotFound`,
which lists what is installed, so a typo in ``[resize] claim_strategy`` stops a
service at start instead of at the first resize.
"""

import functools

from oslo_config import cfg
from oslo_log import log as logging
from stevedore import driver, extension
from stevedore.exception import NoMatches

from resize_sched import exception
from resize_sched.strategies.base import ClaimStrategy, Holdings, ResizeFacts

LOG = logging.getLogger(__name__)

NAMESPACE = "resize_sched.claim_strategies"

__all__ = [
    "NAMESPACE",
    "ClaimStrategy",
    "Holdings",
    "ResizeFacts",
    "configured",
    "get",
    "installed",
    "load",
]


def installed() -> list[str]:
    """Names of the installed claim strategies, sorted."""
    # NOTE: an ExtensionManager that loads nothing: we only want the names,
    # and a broken third-party plugin must not hide the others from the list.
    manager = extension.ExtensionManager(NAMESPACE, invoke_on_load=False)
    return sorted({ep.name for ep in manager.list_entry_points()})


def load(name: str) -> ClaimStrategy:
    """Load and instantiate the claim strategy called ``name``.

    :raises StrategyNotFound: nothing of that name is installed.
    :raises StrategyLoadFailed: it is installed but failed to import, or is not
        a :class:`ClaimStrategy`.
    """
    try:
        manager = driver.DriverManager(NAMESPACE, name, invoke_on_load=True)
    except NoMatches:
        raise exception.StrategyNotFound(name=name, installed=", ".join(installed())) from None
    except RuntimeError as exc:
        # NOTE: stevedore raises RuntimeError when several entry points share
        # the name; say so rather than pick one silently.
        raise exception.StrategyLoadFailed(name=name, reason=str(exc)) from exc
    except Exception as exc:
        raise exception.StrategyLoadFailed(name=name, reason=repr(exc)) from exc
    strategy = manager.driver
    if not isinstance(strategy, ClaimStrategy):
        raise exception.StrategyLoadFailed(
            name=name, reason=f"{type(strategy).__name__} is not a ClaimStrategy"
        )
    LOG.debug("Loaded claim strategy %s", name)
    return strategy


@functools.cache
def get(name: str) -> ClaimStrategy:
    """The strategy called ``name``, loaded once per process.

    Strategies are pure (no I/O, no state), so one instance serves every
    caller: the API choosing a new resize's strategy and the conductor
    running a migration with the strategy it started with. A failed load is
    not remembered: the next call tries again.

    :raises StrategyNotFound: nothing of that name is installed.
    :raises StrategyLoadFailed: as :func:`load`.
    """
    return load(name)


def configured(conf: cfg.ConfigOpts) -> ClaimStrategy:
    """The strategy new resizes use: ``[resize] claim_strategy`` now."""
    return get(conf.resize.claim_strategy)
