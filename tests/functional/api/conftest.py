"""Fixtures of the API tests: a fresh harness per test."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.api.harness import ApiHarness


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiHarness]:
    """The API over a fresh SQLite database, its casts recorded."""
    harness = ApiHarness(tmp_path)
    yield harness
    harness.close()
