"""A failed spawn counts against its node; a successful one resets the count
(the BuildFailureWeigher's ``compute_nodes.failed_builds``)."""

from __future__ import annotations

from collections.abc import Callable

from resize_sched.db import models
from tests.functional.api.test_instance_actions import ALICE, LiveCloud
from tests.functional.fixtures.cloud import Cloud


def _failed_builds(live: LiveCloud, host: str) -> int:
    with live.db._reader() as session:
        return session.query(models.ComputeNode).filter_by(host=host).one().failed_builds


def _boot(live: LiveCloud) -> str:
    body = {"server": {"name": "vm", "flavorRef": "small"}}
    response = live.ok("POST", "/servers", body, token=ALICE)
    live.run()
    return response.json["server"]["id"]


def test_failed_spawns_count_and_a_success_resets(make_cloud: Callable[..., Cloud]) -> None:
    live = LiveCloud(make_cloud("max_flavor"))
    live.cloud.flavor("small", 1, 512, 5, flavorid="small")
    live.add_host("h1", memory_mb=16384, fail_on=("spawn",))
    for expected in (1, 2):
        server = _boot(live)
        assert live.status(server) == "ERROR"
        assert _failed_builds(live, "h1") == expected
    # h2 has less RAM, but h1's failures push it last: the build goes to h2.
    live.add_host("h2", memory_mb=4096)
    server = _boot(live)
    assert live.status(server) == "ACTIVE"
    assert live.db.server_get(server).host == "h2"
    assert (_failed_builds(live, "h1"), _failed_builds(live, "h2")) == (2, 0)
    # A success on h1 resets its count.
    live.computes["h1"].driver.fail_on = ()
    with live.db._writer() as session:
        session.query(models.ComputeNode).filter_by(host="h2").one().failed_builds = 5
    server = _boot(live)
    assert live.db.server_get(server).host == "h1" and live.status(server) == "ACTIVE"
    assert _failed_builds(live, "h1") == 0
