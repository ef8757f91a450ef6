"""What a Galera cluster does to a write, done to a real MariaDB or PostgreSQL.

* a deadlock reported at COMMIT (Galera's certification failure): the call is
  run again whole, and writes its row once;
* the connection killed between two statements of one write (a node dying
  under its open transaction): run again whole, the outcome exact;
* the answer to a COMMIT lost though the COMMIT landed: the run again finds its
  own work done, takes a compare-and-swap as done and creates nothing twice;
* the writes that replace ``SELECT ... FOR UPDATE`` across nodes: a
  transaction that began before ours and writes the same row fails, as the
  later of two transactions certified on two nodes does. One server cannot
  certify; its snapshot isolation (PostgreSQL's REPEATABLE READ, MariaDB's
  ``innodb_snapshot_isolation``) refuses the same pairs: a write to a row
  another transaction *changed* since the snapshot, not one it only locked.
"""

import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pymysql.err
import pytest
import sqlalchemy as sa
from sqlalchemy import event

from resize_sched import exception
from resize_sched.db import models, session, steps
from resize_sched.db.api import Database
from tests.functional.db.conftest import BACKENDS

SERVERS = [p for p in BACKENDS if p.id != "sqlite"]

SOURCE_RP = "11111111-1111-1111-1111-111111111111"
#: looks for a killed connection to be gone, at most (a bound, not a timing)
_POLLS = 500


def _server(db: Database, **kwargs: Any) -> models.Server:
    flavor = db.flavor_create("m1", 2, 2048, 10, flavorid="1")
    args = dict(
        name="vm",
        project_id="p1",
        user_id="u1",
        flavor=flavor,
        status="ACTIVE",
        vm_state="active",
        task_state=None,
        host="host1",
        rp_uuid=SOURCE_RP,
    )
    return db.server_create(**(args | kwargs))


def _migration(db: Database, server: models.Server) -> models.Migration:
    return db.migration_create(
        server_uuid=server.uuid,
        source_host="host1",
        source_node="node1",
        source_rp_uuid=SOURCE_RP,
        old_flavor=server.flavor,
        new_flavor=dict(server.flavor, vcpus=4, id="2"),
        old_resources={"VCPU": 2},
        new_resources={"VCPU": 4},
        claim_strategy="max_flavor",
        project_id="p1",
        user_id="u1",
    )


def _count(admin: sa.Engine, table: sa.Table, *where: Any) -> int:
    with admin.connect() as conn:
        return int(conn.scalar(sa.select(sa.func.count()).select_from(table).where(*where)))


def _retry_lines(caplog: pytest.LogCaptureFixture, what: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == session.__name__ and what in r.getMessage() and "retrying" in r.getMessage()
    ]


# -- (a) a deadlock at COMMIT -----------------------------------------------------------


def _deadlock(dialect: str) -> BaseException:
    if dialect == "postgresql":
        return psycopg.errors.DeadlockDetected("deadlock detected")
    return pymysql.err.OperationalError(
        1213, "Deadlock found when trying to get lock; try restarting transaction"
    )


def _lost(dialect: str) -> BaseException:
    if dialect == "postgresql":
        return psycopg.OperationalError("server closed the connection unexpectedly")
    return pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")


def _fail_commits(
    monkeypatch: pytest.MonkeyPatch, db: Database, times: int, *, land: bool, error: BaseException
) -> list[int]:
    """The next ``times`` COMMITs fail with ``error``; with ``land`` each is
    committed first (its answer lost), else not (rolled back).

    :returns: a list that counts the failed ones.
    """
    real = db.engine.dialect.do_commit
    failed: list[int] = []

    def commit(dbapi_connection: Any) -> None:
        if len(failed) >= times:
            return real(dbapi_connection)
        failed.append(1)
        if land:
            real(dbapi_connection)
            # NOTE: the answer is lost with the connection (psycopg then
            # says it is closed, as after a real loss).
            dbapi_connection.dbapi_connection.close()
        raise error

    monkeypatch.setattr(db.engine.dialect, "do_commit", commit)
    return failed


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_deadlock_at_commit_runs_the_write_again_once(
    quick: Database,
    admin: sa.Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = quick
    server = _server(db)
    failed = _fail_commits(monkeypatch, db, 1, land=False, error=_deadlock(db.engine.dialect.name))
    with caplog.at_level(logging.INFO, logger=session.__name__):
        created = db.server_create(
            name="second", project_id="p1", user_id="u1", flavor=server.flavor
        )
        journaled = db.server_journal_intend(
            server.uuid, phase="claim", before={}, target={"rp": {"VCPU": 2}}
        )
    assert len(failed) == 1
    assert _count(admin, models.Server.__table__, models.Server.name == "second") == 1
    assert db.server_get(created.uuid).name == "second"
    assert [e.id for e in db.server_journal_list(server.uuid)] == [journaled.id]
    lines = _retry_lines(caplog, "database deadlock")
    assert len(lines) == 1 and "attempt 1 of 4" in lines[0], lines


# -- (b) the connection killed in the middle of a write ----------------------------------


def _backend_id(dbapi_connection: Any) -> int:
    info = getattr(dbapi_connection, "info", None)
    pid = getattr(info, "backend_pid", None)
    return int(pid) if pid is not None else int(dbapi_connection.thread_id())


def _kill(admin: sa.Engine, ident: int) -> None:
    """End the server side of connection ``ident``, and wait until it is gone."""
    if admin.dialect.name == "postgresql":
        kill = sa.text("SELECT pg_terminate_backend(:i)")
        alive = sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = :i")
    else:
        kill = sa.text(f"KILL CONNECTION {int(ident)}")
        alive = sa.text("SELECT count(*) FROM information_schema.processlist WHERE id = :i")
    with admin.connect() as conn:
        conn.execute(kill, {"i": ident})
        for _ in range(_POLLS):
            if not conn.scalar(alive, {"i": ident}):
                return
            threading.Event().wait(0.01)
    raise AssertionError(f"connection {ident} still there")


def _kill_after(
    db: Database, admin: sa.Engine, starts: str
) -> tuple[list[int], Callable[[], None]]:
    """Kill the connection that runs the first statement starting with
    ``starts``, right after it ran; returns the list of kills and the undo."""
    killed: list[int] = []

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not killed and statement.lstrip().upper().startswith(starts):
            ident = _backend_id(conn.connection.dbapi_connection)
            killed.append(ident)
            _kill(admin, ident)

    event.listen(db.engine, "after_cursor_execute", after)
    return killed, lambda: event.remove(db.engine, "after_cursor_execute", after)


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_connection_killed_between_two_statements_runs_the_write_again_whole(
    quick: Database, admin: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    db = quick
    server = _server(db)
    migration = _migration(db, server)
    group = db.group_create(name="g", project_id="p1", user_id="u1", policy="anti-affinity")
    killed, undo = _kill_after(db, admin, "UPDATE SERVERS")
    try:
        with caplog.at_level(logging.INFO, logger=session.__name__):
            deleting = db.server_begin_delete(server.uuid)
    finally:
        undo()
    assert len(killed) == 1
    assert deleting.task_state == models.TASK_DELETING
    closed = db.migration_get(migration.uuid)
    assert (closed.status, closed.error_reason, closed.task_owner) == (
        "error",
        "server deleted",
        None,
    )
    assert _retry_lines(caplog, "database connection lost"), caplog.text

    # NOTE: a create of two rows (the server, its group membership).
    killed, undo = _kill_after(db, admin, "INSERT INTO SERVERS")
    try:
        created = db.server_create(
            name="member",
            project_id="p1",
            user_id="u1",
            flavor=server.flavor,
            group_uuid=group.uuid,
        )
    finally:
        undo()
    assert len(killed) == 1
    assert _count(admin, models.Server.__table__, models.Server.name == "member") == 1
    member = models.ServerGroupMember.__table__
    assert _count(admin, member, member.c.server_uuid == created.uuid) == 1


# -- (c) a COMMIT that landed, its answer lost --------------------------------------------


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_compare_and_swap_whose_commit_landed_is_done_once(
    quick: Database,
    admin: sa.Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    db = quick
    server = _server(db)
    migration = _migration(db, server)
    dialect = db.engine.dialect.name

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    with caplog.at_level(logging.INFO, logger=session.__name__):
        taken = db.migration_acquire(
            migration.uuid, expected_status="pre-migrating", token="step-1", step="prep"
        )
    assert len(failed) == 1
    assert taken.task_owner == "step-1"
    assert _retry_lines(caplog, "database connection lost")
    # NOTE: exactly one step owns it: another token is still refused.
    with pytest.raises(exception.StepNotDue):
        db.migration_acquire(
            migration.uuid, expected_status="pre-migrating", token="step-2", step="prep"
        )

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    then: list[int] = []
    stopped = db.server_update(
        server.uuid,
        expected={"task_state": None},
        operation="stop",
        then=lambda session: then.append(1),
        task_state="powering-off",
    )
    assert len(failed) == 1
    assert stopped.task_state == "powering-off"
    # NOTE: the work done with the swap was done once, in the commit that landed.
    assert then == [1]
    with pytest.raises(exception.ServerStateConflict):
        db.server_update(
            server.uuid, expected={"task_state": None}, operation="stop", task_state="x"
        )


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_create_and_an_append_whose_commit_landed_are_not_doubled(
    quick: Database, admin: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = quick
    server = _server(db)
    migration = _migration(db, server)
    dialect = db.engine.dialect.name

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    created = db.server_create(name="once", project_id="p1", user_id="u1", flavor=server.flavor)
    assert len(failed) == 1
    assert _count(admin, models.Server.__table__, models.Server.name == "once") == 1
    assert db.server_get(created.uuid).name == "once"

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    entry = db.server_journal_intend(
        server.uuid, phase="claim", before={}, target={"rp": {"V": 1}}
    )
    assert len(failed) == 1
    assert [(e.id, e.seq) for e in db.server_journal_list(server.uuid)] == [(entry.id, 1)]

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    holdings = {"server": {}, "migration": {SOURCE_RP: {"VCPU": 2}}, "generations": {}}
    moved = db.journal_intend(
        migration.uuid, phase="prepare", before={}, target={"m": 1}, holdings=holdings
    )
    assert len(failed) == 1
    assert [(e.id, e.seq) for e in db.journal_list(migration.uuid)] == [(moved.id, 1)]
    assert db.migration_get(migration.uuid).holdings == holdings

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    second = _migration(db, server)
    assert len(failed) == 1
    assert [m.uuid for m in db.migration_list(server_uuid=server.uuid)] == [
        migration.uuid,
        second.uuid,
    ]

    # NOTE: a uuid taken by another create is still refused.
    with pytest.raises(exception.Conflict):
        db.server_create(
            name="other", project_id="p1", user_id="u1", flavor=server.flavor, uuid=created.uuid
        )


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_late_take_whose_commit_landed_is_done_once(
    quick: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = quick
    server = _server(db)
    migration = _migration(db, server)
    dialect = db.engine.dialect.name
    # NOTE: a schedule's step reads first and takes the migration with its
    # first journal entry, in one commit.
    run = steps.StepRun(migration.uuid, "step-1", "schedule", take_late=True)
    db.step_begin(run, "pre-migrating")
    assert not run.taken

    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(dialect))
    holdings = {"server": {}, "migration": {SOURCE_RP: {"VCPU": 2}}, "generations": {}}
    entry = db.journal_intend(
        migration.uuid, phase="claim", before={}, target={"m": 1}, holdings=holdings, take=run
    )
    assert len(failed) == 1
    assert run.taken
    assert [(e.id, e.seq) for e in db.journal_list(migration.uuid)] == [(entry.id, 1)]
    taken = db.migration_get(migration.uuid)
    assert (taken.task_owner, taken.holdings) == ("step-1", holdings)
    # NOTE: exactly one step owns it: another run's take is still refused.
    other = steps.StepRun(migration.uuid, "step-2", "schedule", take_late=True)
    with pytest.raises(exception.StepNotDue):
        db.step_begin(other, "pre-migrating")


# -- (d) writes instead of cross-node locks ----------------------------------------------


class _Snapshot:
    """A transaction on its own connection that takes its snapshot now, as one
    begun on another Galera node before ours committed, and writes later."""

    def __init__(self, engine: sa.Engine) -> None:
        self.conn = engine.connect()
        if engine.dialect.name != "postgresql":
            self.conn.exec_driver_sql("SET SESSION innodb_snapshot_isolation = ON")
            self.conn.commit()
        self.conn.execution_options(isolation_level="REPEATABLE READ")
        self.tx = self.conn.begin()
        self.conn.execute(sa.select(sa.func.count()).select_from(models.Server.__table__))

    def write(self, statement: Any) -> BaseException | None:
        """Run ``statement`` and commit: the error, or None if it went through."""
        try:
            self.conn.execute(statement)
            self.tx.commit()
        except sa.exc.DBAPIError as exc:
            self.tx.rollback()
            return exc
        finally:
            self.conn.close()
        return None


def _refused_as_conflict(error: BaseException | None) -> bool:
    """A serialization failure: PostgreSQL's 40001, MariaDB's 1020 (the
    record changed since the snapshot read it)."""
    orig = getattr(error, "orig", None)
    if orig is None:
        return False
    if getattr(orig, "sqlstate", None) == "40001":
        return True
    return bool(orig.args) and orig.args[0] == 1020


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_server_journal_append_conflicts_with_a_delete_begun_before_it(
    db: Database, admin: sa.Engine
) -> None:
    server = _server(db, status="BUILD", vm_state="building", task_state="scheduling")
    delete = _Snapshot(admin)
    entry = db.server_journal_intend(
        server.uuid, phase="claim", before={}, target={"rp": {"V": 1}}
    )
    servers = models.Server.__table__
    error = delete.write(
        sa.update(servers).where(servers.c.uuid == server.uuid).values(task_state="deleting")
    )
    assert _refused_as_conflict(error), error
    # NOTE: the delete, run again, comes after the intent and finds it.
    db.server_begin_delete(server.uuid)
    assert [e.id for e in db.server_journal_pending()] == [entry.id]


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_migration_journal_append_conflicts_with_a_take_over_begun_before_it(
    db: Database, admin: sa.Engine
) -> None:
    server = _server(db)
    migration = _migration(db, server)
    db.migration_acquire(migration.uuid, expected_status="pre-migrating", token="t1", step="s")
    other = _Snapshot(admin)
    db.journal_intend(migration.uuid, phase="prepare", before={}, target={}, owner="t1")
    migrations = models.Migration.__table__
    error = other.write(
        sa.update(migrations).where(migrations.c.uuid == migration.uuid).values(task_owner="t2")
    )
    assert _refused_as_conflict(error), error


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_two_late_group_checks_conflict(quick: Database, admin: sa.Engine) -> None:
    db = quick
    group = db.group_create(name="g", project_id="p1", user_id="u1", policy="anti-affinity")
    first = _server(db, status="BUILD", vm_state="building", task_state="scheduling", host=None)
    db.group_add_member(group.uuid, first.uuid)
    other = _Snapshot(admin)
    db.server_advance(
        first.uuid,
        expected={"task_state": "scheduling"},
        operation="claim",
        group_check=True,
        host="host1",
    )
    groups = models.ServerGroup.__table__
    # NOTE: the other member's late check writes the group's row as well.
    error = other.write(
        sa.update(groups).where(groups.c.id == group.id).values(updated_at=models.utcnow())
    )
    assert _refused_as_conflict(error), error


@pytest.mark.parametrize("backend", SERVERS, indirect=True)
def test_a_flavor_spec_update_conflicts_with_one_begun_before_it(
    db: Database, admin: sa.Engine
) -> None:
    db.flavor_create("m1", 2, 2048, 10, flavorid="1")
    other = _Snapshot(admin)
    db.flavor_update_extra_specs("1", updates={"hw:cpu_policy": "dedicated"})
    flavors = models.Flavor.__table__
    error = other.write(
        sa.update(flavors).where(flavors.c.flavorid == "1").values(extra_specs={"a": "b"})
    )
    assert _refused_as_conflict(error), error


@pytest.mark.parametrize("backend", [p for p in SERVERS if p.id == "mysql"], indirect=True)
def test_a_node_not_ready_yet_is_tried_again(
    quick: Database, admin: sa.Engine, caplog: pytest.LogCaptureFixture
) -> None:
    """A Galera node still joining answers every statement with 1047."""
    db = quick
    server = _server(db)
    refused: list[str] = []

    def not_ready(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not refused and statement.lstrip().upper().startswith("INSERT INTO SERVERS"):
            refused.append(statement)
            raise pymysql.err.OperationalError(
                1047, "WSREP has not yet prepared node for application use"
            )

    event.listen(db.engine, "before_cursor_execute", not_ready)
    try:
        with caplog.at_level(logging.INFO, logger=session.__name__):
            created = db.server_create(
                name="late", project_id="p1", user_id="u1", flavor=server.flavor
            )
    finally:
        event.remove(db.engine, "before_cursor_execute", not_ready)
    assert len(refused) == 1
    assert _count(admin, models.Server.__table__, models.Server.uuid == created.uuid) == 1
    (line,) = _retry_lines(caplog, "database connection lost")
    assert "1047" in line


@pytest.mark.parametrize("backend", [p for p in SERVERS if p.id == "mysql"], indirect=True)
def test_every_connection_sets_the_sync_wait_asked_for(backend_url: str) -> None:
    query = sa.text("SELECT @@SESSION.wsrep_sync_wait")
    with Database(backend_url, mysql_wsrep_sync_wait=3) as waiting, Database(backend_url) as plain:
        with waiting.engine.connect() as conn:
            assert conn.scalar(query) == 3
        with plain.engine.connect() as conn, waiting.engine.connect() as other:
            assert conn.scalar(sa.text("SELECT @@GLOBAL.wsrep_sync_wait")) == conn.scalar(query)
            assert other.scalar(query) == 3
