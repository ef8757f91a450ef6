"""Server groups' data API on every backend: members and their hosts in one
read, and the late check deciding two members racing onto one host one
after the other (two workers, each with its own engine)."""

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from resize_sched import actions, exception
from resize_sched.db.api import Database
from resize_sched.db.project_scope import ALL_PROJECTS

ROUNDS = 10
SCHEDULING = {"status": "BUILD", "task_state": "scheduling"}


@pytest.fixture
def other_worker(db: Database, backend_url: str) -> Iterator[Database]:
    other = Database(backend_url)
    yield other
    other.dispose()


def _member(db: Database, group: Any, name: str = "vm") -> Any:
    if db.flavor_list(is_public=None) == []:
        db.flavor_create("small", 1, 512, 1, flavorid="small")
    return actions.create_server(
        db,
        name=name,
        flavorid="small",
        project_id="p",
        user_id="u",
        scheduler_hints={"group": group.uuid},
        group_uuid=group.uuid,
    )


def test_members_and_their_hosts(db: Database) -> None:
    group = db.group_create(name="g", project_id="p", user_id="u", policy="anti-affinity")
    a, b, c = (_member(db, group, n) for n in "abc")
    db.server_advance(a.uuid, expected=SCHEDULING, operation="place", host="h1")
    db.server_advance(b.uuid, expected=SCHEDULING, operation="place", host="h1")
    found = db.group_policy_of(group.uuid, c.uuid)
    assert found is not None
    _, members, hosts = found
    assert members == [a.uuid, b.uuid, c.uuid]
    assert sorted(hosts) == ["h1", "h1"]
    assert db.group_members([group.id]) == {group.id: [a.uuid, b.uuid, c.uuid]}
    assert db.group_of_server(a.uuid).uuid == group.uuid
    assert [g.uuid for g in db.group_list(ALL_PROJECTS)] == [group.uuid]
    assert db.group_count("p") == 1
    with pytest.raises(exception.GroupPolicyViolation):
        db.server_advance(
            c.uuid, expected=SCHEDULING, operation="place", group_check=True, host="h1"
        )
    assert db.server_get(c.uuid).host is None
    db.group_delete(group.uuid, "p")
    assert db.group_of_server(a.uuid) is None
    assert db.group_policy_of(group.uuid, a.uuid) is None


def _race(workers: tuple[Database, Database], servers: list[Any]) -> list[object]:
    """Both workers record host h1 for their member at the same instant."""
    barrier = threading.Barrier(2)
    results: list[object] = [None, None]

    def run(i: int) -> None:
        barrier.wait()
        try:
            workers[i].server_advance(
                servers[i].uuid,
                expected=SCHEDULING,
                operation="place",
                group_check=True,
                host="h1",
            )
            results[i] = "won"
        except exception.GroupPolicyViolation:
            results[i] = "refused"
        except Exception as exc:  # reported by the caller's assertion
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def test_racing_members_onto_one_host_one_wins(db: Database, other_worker: Database) -> None:
    for _ in range(ROUNDS):
        group = db.group_create(name="g", project_id="p", user_id="u", policy="anti-affinity")
        servers = [_member(db, group, "a"), _member(db, group, "b")]
        results = _race((db, other_worker), servers)
        assert sorted(map(str, results)) == ["refused", "won"], results
        hosts = [db.server_get(s.uuid).host for s in servers]
        assert sorted(map(str, hosts)) == ["None", "h1"]
