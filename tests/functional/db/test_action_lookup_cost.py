"""Finding a server's newest action reads a few rows, however big the table.

Every conductor step looks up the newest action of its server among a few
names, and the open event of it (:func:`~resize_sched.db.action_api.step_event_columns`,
``ActionApi._find_action`` and the rest). Once servers have a few hundred
actions each, MariaDB and PostgreSQL are tempted to answer ``ORDER BY id
DESC LIMIT 1`` by walking the primary key backwards until a row of the
server turns up: for a server whose actions are old, that is the whole
table, on every step. PostgreSQL is the more tempted when it plans for any
server at once (a correlated subquery, a prepared statement's generic
plan). These tests give the planner that data, with fresh statistics, and
count the rows the look-ups really read with the database's own counters.
SQLite keeps no such counters and is not checked.
"""

import contextlib
import datetime
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import Session

from resize_sched.db import action_api, action_queries, models
from resize_sched.db.api import Database
from tests.functional.fixtures import database as db_fixture

#: Servers, and the actions of each (5,250 in all): enough that, before the
#: index on (server_uuid, id), both databases chose to walk the primary key
#: backwards and read the other servers' 5,000 rows to find the old one's.
OTHER_SERVERS = 20
ACTIONS_EACH = 250
#: What a look-up may read: the newest resize of the server is 4 actions
#: back among its own, and each action has 3 events.
MOST_ROWS_READ = 40

TABLES = ("instance_actions", "instance_action_events")
EVENT = "compute_prep_resize"


def _analyze(db: Database) -> None:
    with db.engine.begin() as conn:
        for table in TABLES:
            if conn.dialect.name == "postgresql":
                conn.exec_driver_sql(f"ANALYZE {table}")
            else:
                conn.exec_driver_sql(f"ANALYZE TABLE {table}")


@pytest.fixture
def crowded(db: Database) -> Iterator[tuple[Database, models.Migration]]:
    """A migration of a server whose actions are the oldest of thousands."""
    if db.engine.dialect.name == "sqlite":
        pytest.skip("SQLite keeps no count of the rows a statement reads")
    flavor = db.flavor_create("m1", 1, 512, 1, flavorid="1")
    server = db.server_create(
        name="old",
        project_id="p",
        user_id="u",
        flavor=flavor,
        status="ACTIVE",
        vm_state="active",
        task_state=None,
        host="h1",
        rp_uuid=str(uuid.uuid4()),
    )
    migration = db.migration_create(
        server_uuid=server.uuid,
        source_host="h1",
        source_node="h1",
        source_rp_uuid=server.rp_uuid,
        old_flavor=server.flavor,
        new_flavor=server.flavor,
        old_resources={"VCPU": 1},
        new_resources={"VCPU": 1},
        claim_strategy="max_flavor",
        project_id="p",
        user_id="u",
    )
    now = datetime.datetime.now(datetime.UTC)
    names = ("create", "resize", "confirmResize", "stop", "start")

    def action(server_uuid: str, n: int) -> dict[str, Any]:
        return {
            "uuid": str(uuid.uuid4()),
            "server_uuid": server_uuid,
            "request_id": f"req-{server_uuid[:8]}-{n}",
            "action": names[n % len(names)],
            "start_time": now,
            "created_at": now,
        }

    others = [str(uuid.uuid4()) for _ in range(OTHER_SERVERS)]
    with db.engine.begin() as conn:
        conn.execute(
            sa.insert(models.InstanceAction), [action(server.uuid, n) for n in range(ACTIONS_EACH)]
        )
        conn.execute(
            sa.insert(models.InstanceAction),
            [action(other, n) for n in range(ACTIONS_EACH) for other in others],
        )
        ids = conn.scalars(sa.select(models.InstanceAction.id)).all()
        conn.execute(
            sa.insert(models.InstanceActionEvent),
            [
                {"action_id": i, "event": name, "start_time": now, "created_at": now, "host": "h1"}
                | {"uuid": str(uuid.uuid4())}
                for i in ids
                for name in ("conductor_migrate_server", EVENT, "compute_resize_instance")
            ],
        )
    _analyze(db)
    try:
        yield db, migration
    finally:
        # NOTE: statistics of an empty table again, for the tests after.
        db_fixture.wipe(db)
        _analyze(db)


@contextlib.contextmanager
def _rows_read(conn: sa.Connection) -> Iterator[Callable[[], int]]:
    """Within one transaction on ``conn``: a function giving how many rows
    have been read since (MariaDB: any table; PostgreSQL: the action tables)."""
    if conn.dialect.name == "postgresql":
        query = sa.text(
            "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)"
            " FROM pg_stat_xact_user_tables WHERE relname IN :tables"
        ).bindparams(sa.bindparam("tables", expanding=True))

        def count() -> int:
            return int(conn.execute(query, {"tables": list(TABLES)}).scalar_one())

    else:
        query = sa.text("SHOW SESSION STATUS LIKE 'Handler_read%'")

        def count() -> int:
            # NOTE: Handler_read_key counts look-ups that read no row as well;
            # every counter is a row the engine was asked for.
            return sum(int(value) for _, value in conn.execute(query))

    # NOTE: reading the counters may count itself; subtract that.
    start = count()
    itself = count() - start
    start += itself
    yield lambda: count() - start - itself


@contextlib.contextmanager
def _connect(db: Database) -> Iterator[sa.Connection]:
    """A connection in a transaction; on PostgreSQL, statements the driver
    has prepared are planned for any server (their generic plan), as
    PostgreSQL may choose to once one has run a few times."""
    with db.engine.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
        yield conn


#: Runs of a look-up before the one counted: psycopg prepares a statement
#: on the server from its 6th run on the same connection.
WARM_UP = 6


def _check(conn: sa.Connection, what: str, run: Callable[[], Any]) -> Any:
    for _ in range(WARM_UP):
        run()
    with _rows_read(conn) as read:
        result = run()
        rows = read()
    assert rows <= MOST_ROWS_READ, (
        f"{what} read {rows} rows to find the newest of the server's {ACTIONS_EACH}"
        f" actions, older than {OTHER_SERVERS * ACTIONS_EACH} of other servers"
    )
    return result


def test_the_step_read_finds_action_and_open_event_in_a_few_rows(
    crowded: tuple[Database, models.Migration],
) -> None:
    db, migration = crowded
    action_column, event_column = action_api.step_event_columns(True)
    query = sa.select(models.Migration.id, action_column, event_column).where(
        models.Migration.uuid == migration.uuid
    )
    params = action_api.step_event_params(EVENT, action_api.RESIZE_OR_MIGRATE, "h1")
    with _connect(db) as conn:
        row = _check(conn, "the step's read", lambda: conn.execute(query, params).one())
        newest = conn.scalar(
            sa.select(sa.func.max(models.InstanceAction.id)).where(
                models.InstanceAction.server_uuid == migration.server_uuid,
                models.InstanceAction.action == action_api.RESIZE,
            )
        )
    # The action found is the server's newest resize, with its open event.
    assert row[1] == newest and row[2] is not None


def test_finding_the_action_and_its_events_reads_a_few_rows(
    crowded: tuple[Database, models.Migration],
) -> None:
    db, migration = crowded
    server = migration.server_uuid
    api = action_queries
    actions = action_api.RESIZE_OR_MIGRATE
    with _connect(db) as conn, Session(bind=conn) as session:
        found = _check(
            conn, "_find_action", lambda: api.find_action(session, server, actions, None)
        )
        assert found is not None and found.server_uuid == server
        by_request = _check(
            conn,
            "_find_action by an unknown request",
            lambda: api.find_action(session, server, actions, "req-unknown"),
        )
        assert by_request is not None and by_request.id == found.id
        assert _check(conn, "_open_event", lambda: api.open_event(session, found.id, EVENT, "h1"))
        assert not _check(
            conn,
            "_finished_event",
            lambda: api.finished_event(session, found.id, EVENT, "h1"),
        )
        for request_id in (None, "req-unknown"):
            query = action_queries.action_and_open_event(True, request_id is not None)
            params = {
                "server_uuid": server,
                "actions": list(actions),
                "event": EVENT,
                "host": "h1",
                "request_id": request_id,
            }
            row = _check(
                conn,
                f"the start of an event (request id {request_id})",
                lambda q=query, p=params: conn.execute(q, p).one(),
            )
            assert row[0] == found.id and row[1] is not None
