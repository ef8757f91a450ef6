"""Settings for the whole test run."""

import logging

import pytest
from futurist import _thread as futurist_threads

# NOTE: a handler whose stream was an earlier test's captured stderr, now
# closed, fails when a thread that test left behind (an oslo.messaging
# heartbeat retrying a deleted virtual host) logs; logging would print the
# traceback into whichever test runs then. Tests assert on what they log
# themselves, through caplog or their own streams.
logging.raiseExceptions = False

# NOTE: an oslo.messaging server's threading executor (futurist) stops its
# idle workers only when their wait for work times out, after a second: each
# RPC server a test stops cost it up to a second in teardown. Tests stop
# many; a short wait stops them at once (an idle worker wakes 20 times a
# second instead of once: nothing a test can tell apart).
if hasattr(futurist_threads, "ThreadWorker"):
    futurist_threads.ThreadWorker.MAX_IDLE_FOR = 0.05


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, keep every RabbitMQ test on one worker.

    Some of them restart the broker; run side by side on two workers, one
    would restart it under the other. ``--dist loadgroup`` (tox.ini) sends a
    group to a single worker; without xdist nothing changes.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("rabbit") is not None:
            item.add_marker(pytest.mark.xdist_group("rabbit"))


@pytest.fixture(autouse=True)
def _logger_levels_restored():
    """Give every test the logger levels the test before it found.

    NOTE: the commands tested in-process (``resize-sched-simulate``, the
    status and manage commands) set up logging as a process does, including
    oslo.log's ``default_log_levels`` (``resize_sched=ERROR`` for the
    simulation). Left in place, that silences the warnings later tests in the
    same worker look for.
    """
    manager = logging.Logger.manager
    loggers = {n: lg for n, lg in manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    saved = {n: (lg.level, lg.propagate, lg.disabled) for n, lg in loggers.items()}
    root_level, disabled = logging.getLogger().level, manager.disable
    yield
    for name, logger in list(manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger):
            continue
        level, propagate, off = saved.get(name, (logging.NOTSET, True, False))
        if (logger.level, logger.propagate, logger.disabled) != (level, propagate, off):
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, off
    logging.getLogger().setLevel(root_level)
    logging.disable(disabled)
