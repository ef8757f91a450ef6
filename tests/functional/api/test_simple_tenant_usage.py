"""``/v2.1/os-simple-tenant-usage``: usage from servers' launch and delete times.

Servers are given fixed launch and delete times in the database, so the
hours of a period in the past are exact.
"""

import datetime
import urllib.parse
from typing import Any

import pytest
import sqlalchemy as sa

from resize_sched.api.handlers import simple_tenant_usage
from resize_sched.db import models
from tests.functional.api.harness import ALICE, BOB, ApiHarness

DAY = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
WINDOW = "start=2026-01-01T00:00:00&end=2026-01-02T00:00:00"


def _at(hours: float) -> datetime.datetime:
    return DAY + datetime.timedelta(hours=hours)


def _set(api: ApiHarness, server: Any, **values: Any) -> None:
    with api.db.engine.begin() as conn:
        conn.execute(
            sa.update(models.Server).where(models.Server.uuid == server.uuid).values(**values)
        )


def _get(api: ApiHarness, path: str, *, version: str = "2.40", token: str = "admin:admin") -> Any:
    return api.request("GET", f"/v2.1/os-simple-tenant-usage{path}", token=token, version=version)


@pytest.fixture
def servers(api: ApiHarness) -> dict[str, Any]:
    """a1 ran the whole day, a2 six hours of it (deleted), a3 only the next
    day; b1 (project-b) twelve hours; a4 never launched."""
    small = api.flavor("small", vcpus=1, memory_mb=512, root_gb=10, ephemeral_gb=5)
    big = api.flavor("big", vcpus=4, memory_mb=2048, root_gb=20)
    made = {
        "a1": api.server(small, name="a1"),
        "a2": api.server(big, name="a2"),
        "a3": api.server(small, name="a3"),
        "b1": api.server(big, name="b1", project_id="project-b", user_id="bob"),
        "a4": api.server(small, name="a4", active=False),
    }
    _set(api, made["a1"], launched_at=_at(-48))
    _set(
        api,
        made["a2"],
        launched_at=_at(6),
        deleted_at=_at(12),
        status="DELETED",
        vm_state="deleted",
    )
    _set(api, made["a3"], launched_at=_at(30))
    _set(api, made["b1"], launched_at=_at(12))
    return made


def test_hours_within_a_period() -> None:
    start, stop = _at(0), _at(24)
    assert simple_tenant_usage.hours_within(_at(-5), None, start, stop) == 24
    assert simple_tenant_usage.hours_within(_at(6), _at(12), start, stop) == 6
    assert simple_tenant_usage.hours_within(_at(25), None, start, stop) == 0
    assert simple_tenant_usage.hours_within(_at(-9), _at(-1), start, stop) == 0
    assert simple_tenant_usage.hours_within(None, None, start, stop) == 0


def test_list_sums_each_project(api: ApiHarness, servers: dict[str, Any]) -> None:
    response = _get(api, f"?{WINDOW}")
    assert response.status_int == 200, response.json
    usages = {u["tenant_id"]: u for u in response.json["tenant_usages"]}
    assert set(usages) == {"project-a", "project-b"}
    a = usages["project-a"]
    assert "server_usages" not in a
    assert (a["start"], a["stop"]) == ("2026-01-01T00:00:00.000000", "2026-01-02T00:00:00.000000")
    # a1: 24 h of 1 vCPU, 512 MB, 15 GB; a2: 6 h of 4 vCPU, 2048 MB, 20 GB.
    assert a["total_hours"] == pytest.approx(30)
    assert a["total_vcpus_usage"] == pytest.approx(24 + 6 * 4)
    assert a["total_memory_mb_usage"] == pytest.approx(24 * 512 + 6 * 2048)
    assert a["total_local_gb_usage"] == pytest.approx(24 * 15 + 6 * 20)
    assert usages["project-b"]["total_vcpus_usage"] == pytest.approx(12 * 4)

    assert "server_usages" not in _get(api, f"?{WINDOW}&detailed=0").json["tenant_usages"][0]
    # openstacksdk's spelling reads as Nova's.
    assert _get(api, f"?{WINDOW}&detailed=True").json == _get(api, f"?{WINDOW}&detailed=1").json
    detailed = _get(api, f"?{WINDOW}&detailed=1").json["tenant_usages"]
    rows = {u["name"]: u for t in detailed for u in t["server_usages"]}
    assert set(rows) == {"a1", "a2", "b1"}  # a3 launched later, a4 never
    assert rows["a2"] == {
        "instance_id": servers["a2"].uuid,
        "name": "a2",
        "tenant_id": "project-a",
        "flavor": "big",
        "vcpus": 4,
        "memory_mb": 2048,
        "local_gb": 20,
        "hours": pytest.approx(6),
        "started_at": "2026-01-01T06:00:00.000000",
        "ended_at": "2026-01-01T12:00:00.000000",
        "state": "terminated",
        "uptime": 6 * 3600,
    }
    assert (rows["a1"]["state"], rows["a1"]["ended_at"]) == ("active", None)
    assert rows["a1"]["uptime"] > 48 * 3600


def test_show_is_a_project_s_own(api: ApiHarness, servers: dict[str, Any]) -> None:
    mine = _get(api, f"/project-a?{WINDOW}", token=ALICE)
    assert mine.status_int == 200, mine.json
    usage = mine.json["tenant_usage"]
    assert usage["tenant_id"] == "project-a"
    assert sorted(u["name"] for u in usage["server_usages"]) == ["a1", "a2"]
    assert usage["total_hours"] == pytest.approx(30)
    # Another project's usage is refused; the list is for administrators.
    assert _get(api, f"/project-b?{WINDOW}", token=ALICE).status_int == 403
    assert _get(api, f"?{WINDOW}", token=ALICE).status_int == 403
    assert _get(api, f"/project-b?{WINDOW}", token=BOB).status_int == 200
    # A project that ran nothing: {}.
    assert _get(api, f"/project-c?{WINDOW}").json == {"tenant_usage": {}}


def test_paging_from_2_40(api: ApiHarness, servers: dict[str, Any]) -> None:
    first = _get(api, f"?{WINDOW}&detailed=1&limit=2")
    assert first.status_int == 200, first.json
    page = [u["name"] for t in first.json["tenant_usages"] for u in t["server_usages"]]
    [link] = first.json["tenant_usages_links"]
    assert link["rel"] == "next"
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(link["href"]).query))
    assert query["limit"] == "2" and query["detailed"] == "1"
    rest = _get(api, f"?{urllib.parse.urlencode(query)}").json
    assert "tenant_usages_links" not in rest
    page += [u["name"] for t in rest["tenant_usages"] for u in t["server_usages"]]
    # Project, then uuid order; every server once.
    assert sorted(page) == ["a1", "a2", "b1"] and page[-1] == "b1"
    assert len(page) == 3
    # A marker that names no server; before 2.40 limit is not read.
    unknown = _get(api, f"?{WINDOW}&marker=00000000-0000-0000-0000-000000000000")
    assert unknown.status_int == 400
    old = _get(api, f"?{WINDOW}&detailed=1&limit=1", version="2.39").json
    assert "tenant_usages_links" not in old
    assert sum(len(t["server_usages"]) for t in old["tenant_usages"]) == 3
    shown = _get(api, f"/project-a?{WINDOW}&limit=1").json
    assert len(shown["tenant_usage"]["server_usages"]) == 1
    assert "marker=" in shown["tenant_usage_links"][0]["href"]


@pytest.mark.parametrize(
    ("query", "version", "status"),
    [
        ("start=2026-01-02T00:00:00&end=2026-01-01T00:00:00", "2.40", 400),
        ("start=2026-01-01T00:00:00&end=2026-01-01T00:00:00", "2.40", 400),
        ("start=yesterday", "2.40", 400),
        (f"{WINDOW}&colour=red", "2.75", 400),
        (f"{WINDOW}&colour=red", "2.74", 200),
        ("start=2026-01-01 00:00:00.000000", "2.1", 200),
        ("start=2026-01-01T00:00:00.5", "2.80", 200),
    ],
)
def test_query_parameters(api: ApiHarness, query: str, version: str, status: int) -> None:
    response = _get(api, f"?{query}", version=version)
    assert response.status_int == status, response.json


def test_launched_at_is_the_first_launch(api: ApiHarness) -> None:
    server = api.server(api.flavor("small"), active=False)
    shown = api.request("GET", f"/v2.1/servers/{server.uuid}", version="2.80").json["server"]
    assert (shown["OS-SRV-USG:launched_at"], shown["OS-EXT-AZ:availability_zone"]) == (None, "")
    api.place(server.uuid)
    launched = api.db.server_get(server.uuid).launched_at
    assert launched is not None
    api.db.server_update(server.uuid, vm_state="resized", status="VERIFY_RESIZE")
    api.db.server_update(server.uuid, vm_state="active", status="ACTIVE")
    assert api.db.server_get(server.uuid).launched_at == launched
    shown = api.request("GET", f"/v2.1/servers/{server.uuid}", version="2.80").json["server"]
    assert shown["OS-SRV-USG:launched_at"] == launched.replace(tzinfo=None).isoformat(
        timespec="microseconds"
    )
    assert (shown["OS-SRV-USG:terminated_at"], shown["OS-EXT-AZ:availability_zone"]) == (
        None,
        "nova",
    )
    # The server counts from its launch, in the period up to now.
    usage = _get(api, "/project-a?start=2026-01-01T00:00:00", token=ALICE).json["tenant_usage"]
    assert [u["instance_id"] for u in usage["server_usages"]] == [server.uuid]
