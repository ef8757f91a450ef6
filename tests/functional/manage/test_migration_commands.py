"""``resize-sched-manage migration list`` and ``migration show``: what the
Compute API's os-migrations does not show (the claim strategy, why a resize
failed)."""

from typing import Any

from resize_sched import actions, strategies


def _resizes(cloud: Any) -> tuple[Any, Any]:
    small = cloud.db.flavor_create("small", 1, 512, 1, flavorid="small")
    big = cloud.db.flavor_create("big", 2, 1024, 1, flavorid="big")
    servers = []
    for name in ("a", "b"):
        server = actions.create_server(
            cloud.db, name=name, flavorid="small", project_id="p", user_id="u"
        )
        servers.append(
            cloud.db.server_update(
                server.uuid,
                status="ACTIVE",
                vm_state="active",
                task_state=None,
                host="h1",
                node="h1",
                rp_uuid="11111111-1111-1111-1111-111111111111",
            )
        )
    ok = actions.begin_resize(cloud.db, strategies.load("max_flavor"), servers[0].uuid, "big")
    failed = actions.begin_resize(
        cloud.db, strategies.load("drop_and_reclaim"), servers[1].uuid, big.flavorid
    )
    failed = cloud.db.migration_update(
        failed.uuid, status="error", error_kind="deferred", error_reason="no room now"
    )
    assert small.flavorid == "small"
    return ok, failed


def test_list_shows_the_strategy_and_the_error_kind(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud("max_flavor")
    ok, failed = _resizes(cloud)
    code, lines, _ = run(cloud)("migration", "list")
    assert code == 0
    assert len(lines) == 2
    assert ok.uuid in lines[0] and "strategy=max_flavor" in lines[0]
    assert "error=" not in lines[0]
    assert failed.uuid in lines[1] and "strategy=drop_and_reclaim" in lines[1]
    assert "error=deferred" in lines[1]
    code, lines, _ = run(cloud)("migration", "list", "--status", "error")
    assert code == 0 and len(lines) == 1 and failed.uuid in lines[0]


def test_show_by_uuid_or_id(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud("max_flavor")
    _, failed = _resizes(cloud)
    for ident in (failed.uuid, str(failed.id)):
        code, lines, _ = run(cloud)("migration", "show", ident)
        assert code == 0
        assert "claim strategy: drop_and_reclaim" in lines
        assert "error kind: deferred" in lines
        assert "error reason: no room now" in lines
    code, _, err = run(cloud)("migration", "show", "no-such-migration")
    assert code == 1 and "could not be found" in err
