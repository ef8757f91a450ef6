"""Console scripts, one module per command, each with a short ``main()``.

:func:`settle_heap` is what each daemon does once it has started.
"""

import gc

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def settle_heap() -> None:
    """Once a daemon has started: collect the garbage start-up left, then
    move every object still alive (modules, configuration, mappings, pools)
    into the collector's permanent generation (:func:`gc.freeze`).

    Python's cyclic collector otherwise walks all of them again at every
    full collection, a pause of tens of milliseconds in the middle of a
    request once the heap is large (the scheduler's 1,000 candidates per
    request trigger one every few requests); objects made after this are
    collected as before.
    """
    gc.collect()
    gc.freeze()
    LOG.debug("%d objects from start-up set apart from the collector", gc.get_freeze_count())
