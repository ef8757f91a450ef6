"""A data API write the database picks as a deadlock's victim is run again.

A second connection locks a migration, then the server it belongs to, while
``server_begin_delete`` locks them the other way round: a real deadlock on
MariaDB and PostgreSQL. The data API's transaction is made the victim (on
MariaDB the other transaction is heavier, on PostgreSQL the API waits first
and so detects the deadlock first); the call must still succeed, once, with
both transactions' changes kept.
"""

import logging
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from resize_sched.db import models
from resize_sched.db.api import Database
from tests.functional.db.conftest import BACKENDS

#: flavors the other transaction changes first, so that InnoDB (which rolls
#: back the transaction that changed the fewest rows) picks the data API's
_BALLAST = 10
#: looks for the data API waiting, at most (a bound, not a timing)
_POLLS = 6000


@pytest.fixture
def holder(backend_url: str) -> Iterator[sa.Engine]:
    """An engine of its own: the other side of the deadlock."""
    engine = sa.create_engine(backend_url)
    yield engine
    engine.dispose()


def _lock_waiters(engine: sa.Engine) -> int:
    """Transactions of this database waiting for a row lock now."""
    if engine.dialect.name == "postgresql":
        query = (
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
    else:
        # NOTE: the server is shared: only this run's database counts.
        query = (
            "SELECT count(*) FROM information_schema.innodb_trx t "
            "JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id "
            "WHERE t.trx_state = 'LOCK WAIT' AND p.db = DATABASE()"
        )
    with engine.connect() as conn:
        return int(conn.scalar(sa.text(query)))


@pytest.mark.parametrize("backend", [p for p in BACKENDS if p.id != "sqlite"], indirect=True)
def test_a_delete_chosen_as_deadlock_victim_is_retried(
    db: Database, holder: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    flavor = db.flavor_create("m1", 1, 512, 1, flavorid="1")
    for i in range(_BALLAST):
        db.flavor_create(f"ballast{i}", 1, 512, 1, flavorid=f"b{i}")
    server = db.server_create(
        name="vm",
        project_id="p1",
        user_id="u1",
        flavor=flavor,
        status="RESIZE",
        vm_state="active",
        task_state="resize_prep",
        host="host1",
    )
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host="host1",
        source_node="node1",
        source_rp_uuid="11111111-1111-1111-1111-111111111111",
        old_flavor=server.flavor,
        new_flavor=dict(server.flavor, vcpus=2, id="2"),
        old_resources={"VCPU": 1},
        new_resources={"VCPU": 2},
        claim_strategy="max_flavor",
        project_id="p1",
        user_id="u1",
    )
    migrations, servers = models.Migration.__table__, models.Server.__table__
    migration_locked = threading.Event()
    failures: list[BaseException] = []

    def hold() -> None:
        try:
            with holder.begin() as conn:
                conn.execute(
                    sa.update(models.Flavor.__table__)
                    .where(models.Flavor.__table__.c.flavorid.like("b%"))
                    .values(is_public=False)
                )
                conn.execute(
                    sa.update(migrations)
                    .where(migrations.c.uuid == migration.uuid)
                    .values(dest_host="host2")
                )
                migration_locked.set()
                # NOTE: close the cycle only once the data API waits for the
                # migration this transaction holds.
                for _ in range(_POLLS):
                    if _lock_waiters(holder):
                        break
                    threading.Event().wait(0.01)
                else:
                    raise AssertionError("the data API never waited for the migration")
                conn.execute(
                    sa.update(servers)
                    .where(servers.c.uuid == server.uuid)
                    .values(fault_message="held")
                )
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)
            migration_locked.set()

    thread = threading.Thread(target=hold)
    thread.start()
    assert migration_locked.wait(60)
    with caplog.at_level(logging.INFO, logger="resize_sched.db.session"):
        deleting = db.server_begin_delete(server.uuid)
    thread.join(60)

    assert failures == []
    retries = [r for r in caplog.records if "database deadlock" in r.getMessage()]
    assert len(retries) == 1, [r.getMessage() for r in retries]
    assert retries[0].levelno == logging.INFO and retries[0].exc_info is None
    assert "server_begin_delete" in retries[0].getMessage()
    assert deleting.task_state == "deleting"
    after = db.server_get(server.uuid)
    assert (after.task_state, after.fault_message) == ("deleting", "held")
    closed = db.migration_get(migration.uuid)
    assert (closed.status, closed.error_reason, closed.task_owner) == (
        "error",
        "server deleted",
        None,
    )
    assert closed.dest_host == "host2"
