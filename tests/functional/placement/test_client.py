"""PlacementClient against the real Placement service (no fakes of Placement)."""

import socket
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests

from resize_sched import exception
from resize_sched.placement import client as pc
from resize_sched.placement.client import (
    MIGRATION,
    ConsumerWrite,
    PlacementClient,
)
from tests.functional.fixtures import placement as fx

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}
PROJECT = "project-a"
USER = "user-a"


def write(allocations: dict, generation: int | None, consumer_type: str = pc.INSTANCE):
    return ConsumerWrite(allocations, PROJECT, USER, generation, consumer_type)


def new_uuid() -> str:
    return str(uuid.uuid4())


# -- version negotiation and request counting --------------------------------------


def test_negotiates_max_version_once(placement_client: PlacementClient) -> None:
    assert placement_client.request_count == 0
    assert placement_client.max_version >= pc.CONSUMER_TYPE_VERSION
    assert placement_client.supports_consumer_types
    assert placement_client.request_count == 1
    placement_client.max_version  # noqa: B018
    assert placement_client.request_count == 1


def test_request_count_counts_every_request(placement: fx.PlacementInProcess) -> None:
    client = placement.client()
    host = placement.add_host("h1", 4, 4096, 40)
    client.get_usages(host)
    assert client.request_count == 2  # GET / and the usages
    client.reset_request_count()
    assert client.request_count == 0
    client.get_allocations(new_uuid())
    assert client.request_count == 1
    client.set_traits(host, ["CUSTOM_GOLD", "HW_CPU_X86_AVX2"])
    assert client.request_count == 4  # PUT /traits/CUSTOM_GOLD, GET and PUT traits
    with pytest.raises(exception.PlacementNotFound):
        client.get_resource_provider(new_uuid())
    assert client.request_count == 5


# -- resource providers, inventory, traits, usages --------------------------------------


def test_resource_provider_lifecycle(placement_client: PlacementClient) -> None:
    rp_uuid = new_uuid()
    rp = placement_client.create_resource_provider("host-1", uuid=rp_uuid)
    assert (rp["uuid"], rp["name"], rp["generation"]) == (rp_uuid, "host-1", 0)
    child = placement_client.create_resource_provider("host-1-numa0", parent_provider_uuid=rp_uuid)
    other = placement_client.create_resource_provider("host-2")

    got = placement_client.get_resource_provider(child["uuid"])
    assert got["parent_provider_uuid"] == rp_uuid
    assert got["root_provider_uuid"] == rp_uuid

    names = {p["name"] for p in placement_client.list_resource_providers()}
    assert names == {"host-1", "host-1-numa0", "host-2"}
    assert [p["uuid"] for p in placement_client.list_resource_providers(name="host-2")] == [
        other["uuid"]
    ]
    in_tree = placement_client.list_resource_providers(in_tree=rp_uuid)
    assert {p["uuid"] for p in in_tree} == {rp_uuid, child["uuid"]}

    with pytest.raises(exception.PlacementConflict):
        placement_client.create_resource_provider("host-2")
    with pytest.raises(exception.PlacementConflict):  # it has a child
        placement_client.delete_resource_provider(rp_uuid)

    placement_client.delete_resource_provider(other["uuid"])
    with pytest.raises(exception.PlacementNotFound):
        placement_client.get_resource_provider(other["uuid"])
    with pytest.raises(exception.PlacementNotFound):
        placement_client.delete_resource_provider(other["uuid"])


def test_list_resource_providers_filters_traits_and_aggregates(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    gold = placement.add_host("gold", 4, 4096, 40)
    plain = placement.add_host("plain", 4, 4096, 40)
    placement_client.set_traits(gold, ["CUSTOM_GOLD"])
    agg = new_uuid()
    generation = placement_client.get_inventories(plain)[1]
    raw = placement_client._adapter
    resp = raw.put(
        f"/resource_providers/{plain}/aggregates",
        json={"aggregates": [agg], "resource_provider_generation": generation},
        microversion="1.19",
        raise_exc=False,
    )
    assert resp.status_code == 200, resp.text

    required = placement_client.list_resource_providers(required=["CUSTOM_GOLD"])
    assert [p["uuid"] for p in required] == [gold]
    forbidden = placement_client.list_resource_providers(required=["!CUSTOM_GOLD"])
    assert [p["uuid"] for p in forbidden] == [plain]
    members = placement_client.list_resource_providers(member_of=[agg])
    assert [p["uuid"] for p in members] == [plain]
    assert placement_client.list_resource_providers(member_of=[f"in:{new_uuid()}"]) == []


def test_set_inventory_and_read_it_back(placement_client: PlacementClient) -> None:
    rp = placement_client.create_resource_provider("host")
    gen = placement_client.set_inventory(
        rp["uuid"],
        {
            "VCPU": 8,
            "MEMORY_MB": {"total": 16384, "reserved": 512, "allocation_ratio": 1.5},
            "CUSTOM_FPGA": {"total": 4, "max_unit": 2, "step_size": 2},
        },
    )  # generation None: read first; CUSTOM_FPGA is created on the way
    inventories, generation = placement_client.get_inventories(rp["uuid"])
    assert generation == gen == rp["generation"] + 1
    assert inventories["VCPU"]["total"] == 8
    assert inventories["MEMORY_MB"]["reserved"] == 512
    assert inventories["MEMORY_MB"]["allocation_ratio"] == 1.5
    assert (inventories["CUSTOM_FPGA"]["max_unit"], inventories["CUSTOM_FPGA"]["step_size"]) == (
        2,
        2,
    )

    with pytest.raises(exception.ConsumerGenerationConflict) as err:
        placement_client.set_inventory(rp["uuid"], {"VCPU": 4}, generation=gen - 1)
    assert err.value.kwargs["placement_code"] == pc.CONCURRENT_UPDATE
    assert placement_client.get_inventories(rp["uuid"])[0]["VCPU"]["total"] == 8

    assert placement_client.set_inventory(rp["uuid"], {"VCPU": 4}, generation=gen) == gen + 1
    assert set(placement_client.get_inventories(rp["uuid"])[0]) == {"VCPU"}


def test_removing_inventory_in_use_is_a_conflict(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    placement_client.put_allocations(new_uuid(), write({host: OLD}, None))
    with pytest.raises(exception.PlacementConflict) as err:
        placement_client.set_inventory(host, {"VCPU": 4})
    assert type(err.value) is exception.PlacementConflict
    assert err.value.kwargs["placement_code"] == "placement.inventory.inuse"


def test_set_traits(placement: fx.PlacementInProcess, placement_client: PlacementClient) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    before = placement_client.get_resource_provider(host)["generation"]
    gen = placement_client.set_traits(host, ["CUSTOM_FAST_DISK", "HW_CPU_X86_AVX2"])
    assert gen == before + 1 == placement_client.get_resource_provider(host)["generation"]
    traits = placement_client._adapter.get(
        f"/resource_providers/{host}/traits", microversion="1.6"
    ).json()["traits"]
    assert sorted(traits) == ["CUSTOM_FAST_DISK", "HW_CPU_X86_AVX2"]
    with pytest.raises(exception.PlacementBadRequest):
        placement_client.set_traits(host, ["NOT_A_STANDARD_TRAIT"])


def test_usages_are_normalised(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    assert placement_client.get_usages(host) == {}
    placement_client.put_allocations(new_uuid(), write({host: OLD}, None))
    placement_client.put_allocations(new_uuid(), write({host: {"VCPU": 1}}, None))
    assert placement_client.get_usages(host) == {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 10}
    with pytest.raises(exception.PlacementNotFound):
        placement_client.get_usages(new_uuid())


# -- allocation candidates ----------------------------------------------------------------


def test_allocation_candidates(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    small = placement.add_host("small", 1, 1024, 10)
    big = placement.add_host("big", 8, 8192, 100)
    placement_client.set_traits(big, ["CUSTOM_GOLD"])

    found = placement_client.get_allocation_candidates(NEW)
    assert found.allocation_requests == [{big: NEW}]
    assert set(found.provider_summaries) == {big}
    summary = found.provider_summaries[big]
    assert summary["resources"]["VCPU"] == {"capacity": 8, "used": 0}
    assert summary["root_provider_uuid"] == big

    both = placement_client.get_allocation_candidates(OLD)
    assert sorted(both.allocation_requests, key=list) == sorted(
        [{small: OLD}, {big: OLD}], key=list
    )
    assert len(placement_client.get_allocation_candidates(OLD, limit=1).allocation_requests) == 1
    assert placement_client.get_allocation_candidates(
        OLD, required=["CUSTOM_GOLD"]
    ).allocation_requests == [{big: OLD}]
    assert placement_client.get_allocation_candidates(
        OLD, required=["!CUSTOM_GOLD"]
    ).allocation_requests == [{small: OLD}]

    none = placement_client.get_allocation_candidates({"VCPU": 64})
    assert none.allocation_requests == [] and none.provider_summaries == {}
    with pytest.raises(exception.PlacementBadRequest):
        placement_client.get_allocation_candidates({"CUSTOM_NOBODY_HAS_THIS": 1})


def test_in_tree_restricts_candidates_to_one_provider(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    source = placement.add_host("source", 2, 8192, 1028)
    other = placement.add_host("other", 2, 8192, 1028)
    everywhere = placement_client.get_allocation_candidates(OLD)
    assert {rp for ar in everywhere.allocation_requests for rp in ar} == {source, other}

    only_source = placement_client.get_allocation_candidates(OLD, in_tree=source)
    assert only_source.allocation_requests == [{source: OLD}]
    assert set(only_source.provider_summaries) == {source}


# -- allocations -------------------------------------------------------------------------


def test_put_and_get_allocations(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    server = new_uuid()
    absent = placement_client.get_allocations(server)
    assert (absent.allocations, absent.generation) == ({}, None)

    placement_client.put_allocations(server, write({host: OLD}, None))
    got = placement_client.get_allocations(server)
    assert got.allocations == {host: OLD}
    assert got.generation == 1
    assert (got.project_id, got.user_id, got.consumer_type) == (PROJECT, USER, pc.INSTANCE)

    placement_client.put_allocations(server, write({host: NEW}, 1))
    assert placement_client.get_allocations(server).allocations == {host: NEW}
    assert placement_client.get_usages(host) == NEW

    # Emptying it (generation-checked) deletes the consumer.
    placement_client.put_allocations(server, write({}, 2))
    gone = placement_client.get_allocations(server)
    assert (gone.allocations, gone.generation) == ({}, None)
    assert placement_client.get_usages(host) == {}


def test_consumer_type_migration_is_stored(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    assert placement_client.supports_consumer_types
    host = placement.add_host("host", 4, 4096, 40)
    migration = new_uuid()
    placement_client.put_allocations(migration, write({host: OLD}, None, MIGRATION))
    assert placement_client.get_allocations(migration).consumer_type == MIGRATION


def test_stale_consumer_generation_is_a_generation_conflict(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    server = new_uuid()
    placement_client.put_allocations(server, write({host: OLD}, None))

    with pytest.raises(exception.ConsumerGenerationConflict) as err:
        placement_client.put_allocations(server, write({host: NEW}, None))  # it exists
    assert err.value.kwargs["placement_code"] == pc.CONCURRENT_UPDATE
    assert err.value.kwargs["method"] == "PUT"
    assert f"/allocations/{server}" in str(err.value)
    with pytest.raises(exception.ConsumerGenerationConflict):
        placement_client.put_allocations(server, write({host: NEW}, 7))
    with pytest.raises(exception.ConsumerGenerationConflict):
        placement_client.post_allocations({server: write({}, 2)})

    got = placement_client.get_allocations(server)
    assert (got.allocations, got.generation) == ({host: OLD}, 1)


def test_capacity_refusal_is_claim_refused(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 2, 8192, 1028)
    server = new_uuid()
    placement_client.put_allocations(server, write({host: {"DISK_GB": 1028}}, None))
    with pytest.raises(exception.ClaimRefused) as err:
        placement_client.put_allocations(new_uuid(), write({host: {"DISK_GB": 1}}, None))
    assert "Unable to allocate inventory" in str(err.value)
    assert err.value.kwargs["placement_code"] == "placement.undefined_code"
    assert placement_client.get_usages(host) == {"DISK_GB": 1028}


def test_post_moves_to_migration_and_claims_new_host_at_once(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    source = placement.add_host("source", 2, 8192, 100)
    dest = placement.add_host("dest", 4, 8192, 100)
    server, migration = new_uuid(), new_uuid()
    placement_client.put_allocations(server, write({source: OLD}, None))
    placement_client.reset_request_count()

    placement_client.post_allocations(
        {
            migration: write({source: OLD}, None, MIGRATION),
            server: write({dest: NEW}, 1),
        }
    )
    assert placement_client.request_count == 1

    assert placement_client.get_usages(source) == OLD
    assert placement_client.get_usages(dest) == NEW
    mig = placement_client.get_allocations(migration)
    assert (mig.allocations, mig.generation, mig.consumer_type) == ({source: OLD}, 1, MIGRATION)
    srv = placement_client.get_allocations(server)
    assert (srv.allocations, srv.generation) == ({dest: NEW}, 2)


def test_post_changes_nothing_when_any_part_is_refused(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    source = placement.add_host("source", 2, 8192, 100)
    dest = placement.add_host("dest", 1, 8192, 100)  # too few VCPU for NEW
    server, migration = new_uuid(), new_uuid()
    placement_client.put_allocations(server, write({source: OLD}, None))

    def snapshot() -> tuple[Any, ...]:
        return (
            placement_client.get_usages(source),
            placement_client.get_usages(dest),
            placement_client.get_allocations(server),
            placement_client.get_allocations(migration),
        )

    before = snapshot()
    assert before[2].allocations == {source: OLD} and before[3].generation is None

    with pytest.raises(exception.ClaimRefused):
        placement_client.post_allocations(
            {
                migration: write({source: OLD}, None, MIGRATION),
                server: write({dest: NEW}, 1),
            }
        )
    assert snapshot() == before

    with pytest.raises(exception.ConsumerGenerationConflict):  # fits, but a stale generation
        placement_client.post_allocations(
            {
                migration: write({source: OLD}, None, MIGRATION),
                server: write({source: NEW}, 5),
            }
        )
    assert snapshot() == before


def test_post_swaps_old_for_new_on_a_full_host(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    # Placement checks capacity after deleting the listed consumers' rows.
    host = placement.add_host("host", 2, 8192, 1028)
    server = new_uuid()
    old = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 1028}
    new = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 1028}
    placement_client.put_allocations(server, write({host: old}, None))
    placement_client.post_allocations({server: write({host: new}, 1)})
    assert placement_client.get_usages(host) == new


def test_delete_allocations(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 4, 4096, 40)
    server = new_uuid()
    placement_client.put_allocations(server, write({host: OLD}, None))
    assert placement_client.delete_allocations(server) is True
    assert placement_client.get_allocations(server).generation is None
    assert placement_client.get_usages(host) == {}
    assert placement_client.delete_allocations(server) is False


def test_parallel_writers_are_served_one_at_a_time(
    placement: fx.PlacementInProcess, placement_client: PlacementClient
) -> None:
    host = placement.add_host("host", 64, 65536, 640)
    errors: list[BaseException] = []

    def claim() -> None:
        try:
            for _ in range(3):
                placement_client.put_allocations(new_uuid(), write({host: OLD}, None))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert placement_client.get_usages(host) == {"VCPU": 24, "MEMORY_MB": 24576, "DISK_GB": 240}


# -- Placement down, failing, or too old ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL a requests session sends to (each connection attempt)."""
    seen: list[str] = []
    original = requests.Session.send

    def send(self: requests.Session, request: requests.PreparedRequest, **kw: Any) -> Any:
        seen.append(request.url or "")
        return original(self, request, **kw)

    monkeypatch.setattr(requests.Session, "send", send)
    return seen


def test_placement_down_is_unavailable_after_retries(
    placement: fx.PlacementInProcess, sends: list[str]
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/placement"  # nothing listens there
    conf = placement.make_conf(endpoint=endpoint, connect_retries=2)
    client = PlacementClient.from_conf(conf)
    with pytest.raises(exception.PlacementUnavailable) as err:
        client.get_allocations(new_uuid())
    assert err.value.kwargs["method"] == "GET"
    assert len(sends) == 3  # the first attempt and two retries
    assert all(url.startswith(endpoint) for url in sends)
    assert client.request_count == 1


@pytest.fixture
def stub_service() -> Any:
    """Serve a hand-written WSGI app in-process at a made-up endpoint."""
    prefixes: list[str] = []

    def serve(app: Callable[..., Any]) -> str:
        prefix = f"http://stub-{uuid.uuid4().hex[:8]}.test"
        fx.ROUTER.register(prefix + "/", fx.WSGITransport(app))
        prefixes.append(prefix)
        return prefix

    yield serve
    for prefix in prefixes:
        fx.ROUTER.unregister(prefix + "/")


def test_5xx_is_retried_by_keystoneauth_then_unavailable(
    placement: fx.PlacementInProcess, stub_service: Any
) -> None:
    calls: list[str] = []

    def app(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        calls.append(environ["PATH_INFO"])
        start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
        return [b"overloaded"]

    conf = placement.make_conf(endpoint=stub_service(app), status_code_retries=2)
    client = PlacementClient.from_conf(conf)
    with pytest.raises(exception.PlacementUnavailable) as err:
        client.max_version  # noqa: B018
    assert calls == ["/", "/", "/"]
    assert err.value.kwargs["status"] == 503


def test_old_placement_is_version_unsupported(
    placement: fx.PlacementInProcess, stub_service: Any
) -> None:
    def app(environ: dict, start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"versions": [{"id": "v1.0", "min_version": "1.0", "max_version": "1.27"}]}']

    client = PlacementClient.from_conf(placement.make_conf(endpoint=stub_service(app)))
    with pytest.raises(exception.PlacementVersionUnsupported):
        client.get_allocations(new_uuid())


# -- over a real socket ------------------------------------------------------------------------


def test_client_over_http(placement_http: fx.PlacementHTTP) -> None:
    assert placement_http.endpoint.startswith("http://127.0.0.1:")
    client = placement_http.client()
    source = placement_http.add_host("source", 1, 8192, 100)
    dest = placement_http.add_host("dest", 4, 8192, 100)
    server, migration = new_uuid(), new_uuid()

    assert client.get_allocation_candidates(NEW).allocation_requests == [{dest: NEW}]
    client.put_allocations(server, write({source: OLD}, None))
    with pytest.raises(exception.ConsumerGenerationConflict):
        client.put_allocations(server, write({source: OLD}, None))
    client.post_allocations(
        {migration: write({source: OLD}, None, MIGRATION), server: write({dest: NEW}, 1)}
    )
    assert client.get_allocations(migration).consumer_type == MIGRATION
    assert (client.get_usages(source), client.get_usages(dest)) == (OLD, NEW)
    with pytest.raises(exception.ClaimRefused):
        client.put_allocations(new_uuid(), write({dest: {"VCPU": 3}}, None))
    assert client.delete_allocations(server) is True


def test_http_placement_stops_listening(tmp_path: Any) -> None:
    service = fx.PlacementHTTP(str(tmp_path / "p")).start()
    client = service.client(connect_retries=0)
    assert client.list_resource_providers() == []
    service.stop()
    with pytest.raises(exception.PlacementUnavailable):
        client.list_resource_providers()


# -- the fixtures themselves -------------------------------------------------------------------


def test_each_fixture_gets_a_fresh_database(tmp_path: Any) -> None:
    with fx.PlacementInProcess(str(tmp_path / "a")) as first:
        first.add_host("only-in-first", 1, 1024, 10)
        assert len(first.client().list_resource_providers()) == 1
    with fx.PlacementInProcess(str(tmp_path / "b")) as second:
        assert second.client().list_resource_providers() == []


def test_two_live_fixtures_do_not_share_data(
    placement: fx.PlacementInProcess, placement_http: fx.PlacementHTTP
) -> None:
    placement.add_host("in-process", 1, 1024, 10)
    placement_http.add_host("served", 1, 1024, 10)
    assert [p["name"] for p in placement.client().list_resource_providers()] == ["in-process"]
    assert [p["name"] for p in placement_http.client().list_resource_providers()] == ["served"]
