"""Settings for the whole test run."""

import pytest


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
