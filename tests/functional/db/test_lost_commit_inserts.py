"""Every insert of the data API, run again after a COMMIT whose answer was lost,
leaves exactly one row and answers as if nothing had happened.

Two ways the earlier run's row can meet the run again, on a real MariaDB or
PostgreSQL:

* *landed*: the COMMIT landed and its answer was lost; the run again sees
  the row (one server, or a proxy that stays on one Galera node);
* *applied late*: the run again reads before the row is there and inserts
  after it is (a Galera node that applies the earlier commit between the new
  run's read and its write). Only a key the database holds unique tells the
  two inserts are one: without it the row is written twice.
"""

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from resize_sched.db import action_api, models, session
from resize_sched.db.api import Database
from tests.functional.db.test_galera_faults import (
    SERVERS,
    _count,
    _fail_commits,
    _lost,
    _retry_lines,
    _server,
)

pytestmark = pytest.mark.parametrize("backend", SERVERS, indirect=True)

PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDk3 test@example"


@pytest.fixture
def applied_late(
    quick: Database, admin: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[sa.Table], list[int]]]:
    """``applied_late(table)``: the next COMMIT lands and its answer is lost;
    the rows it added to ``table`` are then taken out and put back just
    before the run again inserts into ``table`` (after its read, before its
    write). It returns a list that counts the rows put back."""
    listeners: list[Callable[..., None]] = []

    def arrange(table: sa.Table) -> list[int]:
        before = {row.id for row in _rows(admin, table)}
        error = _lost(quick.engine.dialect.name)
        failed = _fail_commits(monkeypatch, quick, 1, land=True, error=error)
        aside: list[dict[str, Any]] = []
        put_back: list[int] = []

        def take_out() -> None:
            with admin.begin() as conn:
                rows = conn.execute(sa.select(table)).mappings()
                aside.extend(dict(row) for row in rows if row["id"] not in before)
                conn.execute(sa.delete(table).where(table.c.id.in_([r["id"] for r in aside])))

        def before_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            if failed and not aside and not put_back:
                take_out()
            if aside and statement.lstrip().upper().startswith(
                f"INSERT INTO {table.name.upper()}"
            ):
                with admin.begin() as other:
                    other.execute(sa.insert(table), aside)
                put_back.extend(r["id"] for r in aside)
                aside.clear()

        event.listen(quick.engine, "before_cursor_execute", before_insert)
        listeners.append(before_insert)
        return put_back

    yield arrange
    for listener in listeners:
        event.remove(quick.engine, "before_cursor_execute", listener)


def _rows(admin: sa.Engine, table: sa.Table, *where: Any) -> list[Any]:
    with admin.connect() as conn:
        return list(conn.execute(sa.select(table).where(*where)))


ACTIONS = models.InstanceAction.__table__
EVENTS = models.InstanceActionEvent.__table__


def _action(db: Database, server: models.Server) -> models.InstanceAction:
    return db.action_start(server.uuid, "req-1", action_api.RESIZE, user_id="u1", project_id="p1")


# -- each insert, its COMMIT landed and its answer lost ------------------------------------


def _group(db: Database) -> models.ServerGroup:
    return db.group_create(name="g", project_id="p1", user_id="u1", policy="affinity")


def _zone_host(db: Database) -> int:
    db.compute_node_report(
        host="host1", node="node1", rp_uuid="22222222-2222-2222-2222-222222222222", inventory={}
    )
    return db.aggregate_create("agg").id


def _acting_server(db: Database) -> models.Server:
    server = _server(db)
    _action(db, server)
    return server


#: name -> (set-up, the insert, the table, which of its rows are the insert's)
CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], sa.Table, Any]] = {
    "server group": (
        lambda db: None,
        lambda db, _: _group(db),
        models.ServerGroup.__table__,
        models.ServerGroup.name == "g",
    ),
    "group member": (
        lambda db: (_group(db).uuid, _server(db).uuid),
        lambda db, ids: db.group_add_member(*ids),
        models.ServerGroupMember.__table__,
        sa.true(),
    ),
    "aggregate": (
        lambda db: None,
        lambda db, _: db.aggregate_create("agg", availability_zone="az1"),
        models.Aggregate.__table__,
        models.Aggregate.name == "agg",
    ),
    "aggregate host": (
        _zone_host,
        lambda db, agg: db.aggregate_add_host(agg, "host1"),
        models.AggregateHost.__table__,
        sa.true(),
    ),
    "flavor": (
        lambda db: None,
        lambda db, _: db.flavor_create("f1", 1, 512, 1),
        models.Flavor.__table__,
        models.Flavor.name == "f1",
    ),
    "flavor access": (
        lambda db: db.flavor_create("private", 1, 512, 1, is_public=False).flavorid,
        lambda db, flavorid: db.flavor_access_add(flavorid, "p2"),
        models.FlavorProject.__table__,
        sa.true(),
    ),
    "key pair": (
        lambda db: None,
        lambda db, _: db.keypair_create("u1", "k1", PUBLIC_KEY, "aa:bb"),
        models.KeyPair.__table__,
        sa.true(),
    ),
    "request spec": (
        lambda db: _server(db).uuid,
        lambda db, uuid: db.request_spec_create(uuid, resources={"VCPU": 1}, required_traits=()),
        models.RequestSpec.__table__,
        sa.true(),
    ),
    "instance action": (
        _server,
        _action,
        ACTIONS,
        sa.true(),
    ),
    "event started": (
        _acting_server,
        lambda db, server: db.action_event_start(
            server.uuid, "compute_prep_resize", action_api.RESIZE_OR_MIGRATE, host="host1"
        ),
        EVENTS,
        sa.true(),
    ),
    "event finished": (
        _acting_server,
        lambda db, server: db.action_event_finish(
            server.uuid, "compute_prep_resize", action_api.RESIZE_OR_MIGRATE, host="host1"
        ),
        EVENTS,
        sa.true(),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_insert_whose_commit_landed_is_written_once(
    case: str,
    quick: Database,
    admin: sa.Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_up, insert, table, mine = CASES[case]
    db = quick
    given = set_up(db)
    failed = _fail_commits(monkeypatch, db, 1, land=True, error=_lost(db.engine.dialect.name))
    with caplog.at_level(logging.INFO, logger=session.__name__):
        insert(db, given)
    assert len(failed) == 1
    assert _count(admin, table, mine) == 1
    assert _retry_lines(caplog, "database connection lost")


@pytest.mark.parametrize("case", ["server group", "instance action", "event started"])
def test_an_insert_applied_late_by_another_node_is_written_once(
    case: str,
    quick: Database,
    admin: sa.Engine,
    applied_late: Callable[[sa.Table], list[int]],
) -> None:
    set_up, insert, table, mine = CASES[case]
    db = quick
    given = set_up(db)
    put_back = applied_late(table)
    insert(db, given)
    assert len(put_back) == 1
    assert _count(admin, table, mine) == 1
