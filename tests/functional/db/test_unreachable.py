"""A write against a database that is not there fails fast, saying where it
looked and what to check; a Galera node's change-over is still ridden out
(``tests/functional/db/test_galera_faults.py``).

No server is needed: the URLs name a port nothing listens on.
"""

import logging
import socket
import time

import pytest

from resize_sched.db import retry
from resize_sched.db.api import Database


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "url",
    ["mysql+pymysql://root@127.0.0.1:{port}/rs", "postgresql+psycopg://pg@127.0.0.1:{port}/rs"],
    ids=["mysql", "postgresql"],
)
def test_a_write_to_a_closed_port_fails_after_one_quick_reconnect_try(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    port = _closed_port()
    db = Database(url.format(port=port))
    budget = db.retry_policy.connection_retry_timeout
    started = time.monotonic()
    try:
        with caplog.at_level(logging.INFO, logger=retry.LOG.logger.name):
            with pytest.raises(retry.DatabaseUnreachable) as raised:
                db.flavor_create("m1", 1, 512, 1)
    finally:
        db.dispose()
    elapsed = time.monotonic() - started

    error = raised.value
    assert error.attempts == retry.UNREACHABLE_ATTEMPTS == 2
    assert f"127.0.0.1:{port}" in str(error)
    assert "refused" in error.reason.lower()
    assert "[database] connection" in str(error)
    assert retry.is_connection_lost(error)  # still a database error to its callers
    lines = [r.getMessage() for r in caplog.records if r.name == retry.LOG.logger.name]
    assert [line.split(":")[1].strip() for line in lines] == [
        "database unreachable (attempt 1 of 2), retrying the transaction",
        "database unreachable, giving up after 2 attempts",
    ]
    # NOTE: a sanity bound only; the attempts are what matters.
    assert elapsed < budget + 5
