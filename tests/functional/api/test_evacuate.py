"""``evacuate`` through the API, the conductor and fake compute hosts over
the real Placement: the server is rebuilt elsewhere only while its host is
down, the destination is claimed while the migration holds the source, and
when the source's compute service reports again its copy is removed and its
room given back, so the server never runs twice and nothing is held twice.
A delete racing it, at each point, leaves nothing held by either consumer.
Also ``forced_down`` on ``os-services`` (2.11's action, 2.53's body).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from resize_sched.conductor import recovery
from resize_sched.context import admin_context
from tests.functional.api.test_instance_actions import ALICE, BOB, LiveCloud, events
from tests.functional.api.test_live_migration import (
    _boot,
    _copies,
    _holds,
    _migration,
    _on,
    _service,
    _state,
    _until,
)
from tests.functional.fixtures.cloud import Cloud


@pytest.fixture
def live(make_cloud: Callable[..., Cloud]) -> Iterator[LiveCloud]:
    cloud = LiveCloud(make_cloud())
    cloud.cloud.flavor("small", 1, 512, 5, flavorid="small")
    yield cloud


def _force_down(live: LiveCloud, host: str, down: bool = True) -> None:
    live.ok("PUT", f"/os-services/{_service(live, host)}", {"forced_down": down}, version="2.53")


def _evacuate(live: LiveCloud, server: str, host: str | None = None, **kw: Any) -> Any:
    body: dict[str, Any] = {"evacuate": {} if host is None else {"host": host}}
    return live.request("POST", f"/servers/{server}/action", body, version="2.29", **kw)


def _comes_back(live: LiveCloud, host: str) -> None:
    """``host``'s compute service starts again: forced down no more, and its
    first report reaches the conductor."""
    _force_down(live, host, False)
    rp = live.cloud.hosts[host]
    inventory, generation = live.cloud.observer.get_inventories(rp)
    live.conductor.compute_report(
        admin_context(),
        host=host,
        node=host,
        rp_uuid=rp,
        inventory=inventory,
        provider_generation=generation,
        service_version="1.2",
    )
    live.run()


def test_an_evacuation_holds_the_source_until_its_host_returns(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    assert _evacuate(live, server).status_int == 409  # h1 is up
    assert live.db.migration_list(server_uuid=server) == []
    _force_down(live, "h1")
    response = _evacuate(live, server)
    assert response.status_int == 200, response.text
    migration = _migration(live, server)
    assert (migration.migration_type, migration.status) == ("evacuation", "accepted")
    assert _state(live, server)[:3] == ("REBUILD", "active", "rebuilding")

    _until(live, "rebuild_instance")
    assert _migration(live, server).status == "pre-migrating"
    assert _holds(live, migration.uuid) == _on(live, "h1")
    assert _holds(live, server) == _on(live, "h2")
    live.cloud.check()

    live.run()
    assert _migration(live, server).status == "done"
    assert _state(live, server) == ("ACTIVE", "active", None, "h2")
    # The dead host keeps its room (and, here, its stale copy) until it is back.
    assert _holds(live, migration.uuid) == _on(live, "h1")
    assert _holds(live, server) == _on(live, "h2")
    live.cloud.check()

    _comes_back(live, "h1")
    migration = _migration(live, server)
    assert migration.status == "completed"
    assert _holds(live, migration.uuid) == {}
    assert _holds(live, server) == _on(live, "h2")
    assert live.cloud.usage("h1") == {}
    assert _copies(live, server) == ["h2"]
    live.cloud.check()
    # A second report changes nothing.
    _comes_back(live, "h1")
    assert _migration(live, server).status == "completed"

    (action,) = [a for a in live.actions(server) if a["action"] == "evacuate"]
    assert events(live.action(server, action["request_id"])) == [
        ("conductor_rebuild_server", "Success"),
        ("compute_rebuild_instance", "Success"),
    ]


def test_a_failed_rebuild_leaves_the_server_in_error_on_its_source(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2", fail_on={"h2": ("rebuild",)})
    _force_down(live, "h1")
    before = _holds(live, server)
    assert _evacuate(live, server, "h2").status_int == 200
    live.run()
    migration = _migration(live, server)
    assert migration.status == "failed"
    assert _state(live, server)[0::3] == ("ERROR", "h1")
    assert _holds(live, server) == before == _on(live, "h1")
    assert _holds(live, migration.uuid) == {}
    assert live.cloud.usage("h2") == {}
    live.cloud.check()


def test_a_lost_rebuild_is_sent_again_by_recovery(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    _force_down(live, "h1")
    assert _evacuate(live, server).status_int == 200
    _until(live, "rebuild_instance")
    live.queue.popleft()
    recovery.recover(live.conductor)
    live.run()
    assert _migration(live, server).status == "done"
    assert _state(live, server)[3] == "h2"
    live.cloud.check()


def test_bad_evacuations_change_nothing(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    _force_down(live, "h1")
    before = (_state(live, server), _holds(live, server))

    def refused(status: int, host: str | None = None, **kw: Any) -> str:
        response = _evacuate(live, server, host, **kw)
        assert response.status_int == status, response.text
        assert live.db.migration_list(server_uuid=server) == []
        assert (_state(live, server), _holds(live, server)) == before
        assert not live.queue
        return response.text

    assert "could not be found" in refused(404, "nowhere")
    assert "already runs on host h1" in refused(400, "h1")
    refused(403, token=ALICE)
    refused(404, token=BOB)
    path = f"/servers/{server}/action"
    # onSharedStorage is required before 2.14; force is gone from 2.68.
    assert live.request("POST", path, {"evacuate": {}}, version="2.13").status_int == 400
    forced = {"evacuate": {"host": "h2", "force": True}}
    assert live.request("POST", path, forced, version="2.68").status_int == 400


def test_before_2_14_the_answer_carries_the_admin_password(live: LiveCloud) -> None:
    server = _boot(live, "h1", "h2")
    _force_down(live, "h1")
    body = {"evacuate": {"onSharedStorage": False, "adminPass": "s3cret"}}
    response = live.request("POST", f"/servers/{server}/action", body, version="2.13")
    assert response.status_int == 200, response.text
    assert response.json == {"adminPass": "s3cret"}
    live.run()
    assert _state(live, server)[3] == "h2"


def test_force_down_before_2_53(live: LiveCloud) -> None:
    live.add_host("h1")
    body = {"host": "h1", "binary": "nova-compute", "forced_down": True}
    assert live.request("PUT", "/os-services/force-down", body, version="2.10").status_int == 404
    answer = live.ok("PUT", "/os-services/force-down", body, version="2.11").json
    assert answer == {"service": {"host": "h1", "binary": "nova-compute", "forced_down": True}}
    listed = live.ok("GET", "/os-services", version="2.11").json["services"]
    (h1,) = [s for s in listed if s["host"] == "h1"]
    assert (h1["forced_down"], h1["state"]) == (True, "down")
    assert live.request("PUT", "/os-services/force-down", body, version="2.53").status_int == 404


@pytest.mark.parametrize(
    "point",
    [
        "evacuate_server",  # accepted: the conductor has not claimed yet
        "rebuild_instance",  # pre-migrating: h2 is claimed, not rebuilt yet
        "done",  # the server runs on h2; the migration still holds h1
    ],
)
def test_a_delete_racing_an_evacuation_leaves_nothing_held(live: LiveCloud, point: str) -> None:
    server = _boot(live, "h1", "h2")
    _force_down(live, "h1")
    assert _evacuate(live, server).status_int == 200
    if point == "done":
        live.run()
        migration = _migration(live, server)
        assert migration.status == "done"
        assert _holds(live, migration.uuid) == _on(live, "h1")
        assert _holds(live, server) == _on(live, "h2")
    else:
        _until(live, point)
    assert live.request("DELETE", f"/servers/{server}", token=ALICE).status_int == 204
    live.run()
    assert live.db.server_get(server, read_deleted=True).status == "DELETED"
    migration = _migration(live, server)
    assert (migration.status, migration.error_reason) == ("error", "server deleted")
    assert _holds(live, server) == {} and _holds(live, migration.uuid) == {}
    assert live.cloud.usage("h1") == {} and live.cloud.usage("h2") == {}
    # The destroy is cast to every host involved; h1 is down in the database
    # only, so here it takes it at once (a dead one on its return).
    assert _copies(live, server) == []
    live.cloud.check()

    # h1's service reports again: the closed evacuation gives nothing back twice.
    _comes_back(live, "h1")
    assert _migration(live, server).status == "error"
    assert _holds(live, server) == {} and _holds(live, migration.uuid) == {}
    assert live.cloud.usage("h1") == {} and live.cloud.usage("h2") == {}
    live.cloud.check()
