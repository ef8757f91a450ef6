"""The compute-service fixtures, shared with :mod:`tests.functional.compute`."""

from tests.functional.compute.conftest import (  # noqa: F401 - fixtures
    conductor,
    make_compute,
    make_conf,
    transport,
)
