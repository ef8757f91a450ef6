"""``resize-sched-manage placement heal`` / ``placement audit`` against the real Placement.

The commands run in-process through :func:`resize_sched.cmd.manage.main` (the
in-process Placement fixture is reachable only from this process), with a
config file pointing ``[database]`` and ``[placement]`` at the test cloud.
"""

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resize_sched import exception, rpc
from resize_sched import resources as rs
from resize_sched.cmd import manage
from resize_sched.compute.rpcapi import ComputeAPI
from resize_sched.conductor import audit, heal, recovery
from resize_sched.conductor.manager import ConductorManager
from resize_sched.placement.client import ConsumerWrite, PlacementClient
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.database import fresh_sqlite_database

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}
NEW = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}
HUGE = {"VCPU": 4, "MEMORY_MB": 1024, "DISK_GB": 10}

Run = Callable[..., tuple[int, list[str], str]]


@pytest.fixture
def run(run: Any) -> Callable[..., Run]:
    """``run(cloud)(*args)``: one ``resize-sched-manage placement`` command
    (the package conftest's runner, ``placement`` put first)."""

    def bind(cloud: Cloud) -> Run:
        command = run(cloud)
        return lambda *args: command("placement", *args)

    return bind


def _flavor(cloud: Cloud, name: str, amounts: dict[str, int]) -> Any:
    return cloud.flavor(name, amounts["VCPU"], amounts["MEMORY_MB"], amounts["DISK_GB"])


def _flagged(make_cloud: Callable[..., Cloud]) -> tuple[Cloud, Any, Any, str]:
    """A server flagged needs_heal: its restore was refused (see test_resize_strategies)."""
    cloud = make_cloud("drop_and_reclaim")
    cloud.add_host("host1", vcpus=2, memory_mb=4096, disk_gb=100)
    server = cloud.boot("vm", _flavor(cloud, "old", OLD))
    migration = cloud.resizes.begin(server.uuid, _flavor(cloud, "huge", HUGE).flavorid)
    squatter: list[str] = []

    def squat_once() -> None:
        if not squatter:
            squatter.append(cloud.squat("host1", VCPU=2))

    cloud.before_scheduling(squat_once)
    with pytest.raises(exception.RestoreFailed):
        cloud.resizes.schedule(migration.uuid)
    assert cloud.db.server_get(server.uuid).needs_heal
    assert cloud.holds(server.uuid) == {}
    cloud.check()
    return cloud, server, migration, squatter[0]


def _state(cloud: Cloud, server: Any, migration: Any) -> tuple[Any, ...]:
    """Everything heal could change."""
    s, m = cloud.db.server_get(server.uuid), cloud.db.migration_get(migration.uuid)
    journal = [(e.phase, e.state) for e in cloud.db.journal_list(migration.uuid)]
    return cloud.holds(server.uuid), cloud.holds(migration.uuid), s.needs_heal, m.missing, journal


class _Racing(PlacementClient):
    """A client whose read of ``consumer`` is followed (or preceded) by someone's write."""

    def __init__(
        self, base: PlacementClient, consumer: str, touch: Callable[[], None], before: bool
    ) -> None:
        super().__init__(base._adapter)
        self.consumer, self.touch, self.before = consumer, touch, before

    def get_allocations(self, consumer_uuid: str) -> Any:
        if consumer_uuid == self.consumer and self.before:
            self.touch()
        read = super().get_allocations(consumer_uuid)
        if consumer_uuid == self.consumer and not self.before:
            self.touch()
        return read


def _someone_writes(cloud: Cloud, consumer: str, amounts: dict[str, int]) -> Callable[[], None]:
    def touch() -> None:
        held = cloud.observer.get_allocations(consumer)
        write = ConsumerWrite(cloud.on("host1", amounts), "other", "other", held.generation)
        cloud.observer.put_allocations(consumer, write)

    return touch


# -- heal ------------------------------------------------------------------------------


def test_heal_flagged_server_once_room_is_free(make_cloud, run) -> None:
    cloud, server, migration, squatter = _flagged(make_cloud)
    cloud.leave(squatter)
    code, out, err = run(cloud)("heal")
    assert code == 0, err
    assert out == [
        f"healed {server.uuid} on host1: {rs.format_resources(OLD)}",
        "1 healed, 0 still missing, 0 ok, 0 skipped (resize in flight).",
    ]
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(migration.uuid) == {}
    healed = cloud.db.server_get(server.uuid)
    assert not healed.needs_heal and healed.status == "ACTIVE"
    assert healed.placement_generation == cloud.observer.get_allocations(server.uuid).generation
    done = cloud.db.migration_get(migration.uuid)
    assert (done.missing, done.status) == (None, "error")
    assert cloud.db.journal_list(migration.uuid)[-1].phase == "heal"
    assert cloud.db.journal_list(migration.uuid)[-1].state == "applied"
    cloud.check()

    # Healed means healthy: nothing left to do, and the server resizes again.
    code, out, _ = run(cloud)("heal")
    assert (code, out) == (0, ["0 healed, 0 still missing, 1 ok, 0 skipped (resize in flight)."])
    cloud.add_host("host2", vcpus=4, memory_mb=8192, disk_gb=100)
    cloud.resize_to_verify(healed, _flavor(cloud, "new", NEW))
    cloud.confirm(healed)


def test_heal_refused_while_the_room_is_taken(make_cloud, run) -> None:
    cloud, server, migration, _squatter = _flagged(make_cloud)
    before = _state(cloud, server, migration)
    code, out, _ = run(cloud)("heal")
    assert code == 1
    assert out[0].startswith(f"still missing {server.uuid} on host1: ")
    assert "Placement refused the claim" in out[0] and "exceed the capacity" in out[0]
    assert out[1] == "0 healed, 1 still missing, 0 ok, 0 skipped (resize in flight)."
    after = _state(cloud, server, migration)
    # Placement, the flag and the record are as they were; the journal only
    # gained the attempt, abandoned.
    assert after[:4] == before[:4]
    assert after[4] == [*before[4], ("heal", "abandoned")]
    cloud.check()


def test_heal_dry_run_writes_nothing(make_cloud, run) -> None:
    cloud, server, migration, squatter = _flagged(make_cloud)
    cloud.leave(squatter)
    before = _state(cloud, server, migration)
    code, out, _ = run(cloud)("heal", "--dry-run")
    assert code == 1
    assert out == [
        f"would heal {server.uuid} on host1: {rs.format_resources(OLD)} (holds nothing)",
        "Dry run, nothing written: 1 would heal, 0 still missing, 0 ok, "
        "0 skipped (resize in flight).",
    ]
    assert _state(cloud, server, migration) == before
    cloud.check()


@pytest.mark.parametrize("damage", ["deleted", "wrong"])
def test_heal_allocation_lost_behind_our_back(make_cloud, run, damage: str) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old = _flavor(cloud, "old", OLD)
    victim = cloud.boot("victim", f_old, host="host1")
    bystander = cloud.boot("bystander", f_old, host="host2")
    resizing = cloud.boot("resizing", f_old, host="host2")
    cloud.resize_to_verify(resizing, _flavor(cloud, "new", NEW))
    if damage == "deleted":
        assert cloud.observer.delete_allocations(victim.uuid)
    else:
        held = cloud.observer.get_allocations(victim.uuid)
        wrong = {**cloud.on("host1", {"VCPU": 3}), **cloud.on("host2", {"VCPU": 1})}
        cloud.observer.put_allocations(
            victim.uuid, ConsumerWrite(wrong, "project-a", "user-a", held.generation)
        )
    resizing_holds = cloud.holds(resizing.uuid)

    code, out, err = run(cloud)("heal", "--dry-run")
    assert code == 1 and out[0].startswith(f"would heal {victim.uuid} on host1: "), err
    code, out, err = run(cloud)("heal")
    assert code == 0, err
    assert out == [
        f"healed {victim.uuid} on host1: {rs.format_resources(OLD)}",
        "1 healed, 0 still missing, 1 ok, 1 skipped (resize in flight).",
    ]
    assert cloud.holds(victim.uuid) == cloud.on("host1", OLD)
    assert cloud.holds(bystander.uuid) == cloud.on("host2", OLD)
    assert cloud.holds(resizing.uuid) == resizing_holds
    healed = cloud.db.server_get(victim.uuid)
    assert healed.placement_generation == cloud.observer.get_allocations(victim.uuid).generation
    cloud.check()
    # The generation recorded is right: a resize's first write needs no re-read.
    cloud.resize_to_verify(healed, _flavor(cloud, "new2", NEW))


@pytest.mark.parametrize("flagged", [True, False])
def test_heal_leaves_a_server_written_meanwhile(make_cloud, flagged: bool) -> None:
    """Someone (a resize beginning) writes the server between heal's read and write."""
    if flagged:
        cloud, server, migration, squatter = _flagged(make_cloud)
        cloud.leave(squatter)
    else:
        cloud = make_cloud()
        cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
        server = cloud.boot("vm", _flavor(cloud, "old", OLD))
        cloud.observer.delete_allocations(server.uuid)
    theirs = {"VCPU": 1}
    client = _Racing(cloud.client, server.uuid, _someone_writes(cloud, server.uuid, theirs), False)
    report = heal.heal(cloud.db, client, owner_trait=DEFAULT_OWNER_TRAIT)
    assert [(r.outcome, r.reason) for r in report.results] == [
        (heal.MISSING, "its allocations changed in Placement meanwhile; run heal again")
    ]
    assert not report.complete
    assert cloud.holds(server.uuid) == cloud.on("host1", theirs)  # theirs, not overwritten
    assert cloud.db.server_get(server.uuid).needs_heal == flagged
    if flagged:
        assert cloud.db.migration_get(migration.uuid).missing is not None
        assert cloud.db.journal_list(migration.uuid)[-1].state == "abandoned"


def test_recovery_retries_a_failed_restore_as_heal_does(make_cloud) -> None:
    cloud, server, migration, squatter = _flagged(make_cloud)
    transport = rpc.get_transport(cloud.conf, "fake://", exchange=f"heal_{uuid.uuid4().hex}")
    manager = ConductorManager(cloud.deps, ComputeAPI(cloud.conf, transport))

    report = recovery.recover(manager)
    assert "exceed the capacity" in report.failed[migration.uuid]
    assert cloud.db.server_get(server.uuid).needs_heal
    assert cloud.db.migration_get(migration.uuid).missing is not None

    cloud.leave(squatter)
    report = recovery.recover(manager)
    assert report.resumed == {migration.uuid: "restore retried"}
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    assert not cloud.db.server_get(server.uuid).needs_heal
    assert cloud.db.migration_get(migration.uuid).missing is None
    assert recovery.recover(manager).found == 0
    cloud.check()


# -- audit -----------------------------------------------------------------------------


def _busy_cloud(make_cloud: Callable[..., Cloud]) -> tuple[Cloud, list[Any], Any]:
    """Two hosts, a server at rest and one in VERIFY_RESIZE on the other host."""
    cloud = make_cloud("legacy", resize={"allow_same_host": False})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    f_old = _flavor(cloud, "old", OLD)
    at_rest = cloud.boot("at-rest", f_old, host="host1")
    resizing = cloud.boot("resizing", f_old, host="host1")
    migration, dest = cloud.resize_to_verify(resizing, _flavor(cloud, "new", NEW))
    assert dest.host == "host2" and cloud.holds(migration.uuid) == cloud.on("host1", OLD)
    return cloud, [at_rest, resizing], migration


def test_audit_on_a_clean_cloud(make_cloud, run) -> None:
    cloud, _servers, _migration = _busy_cloud(make_cloud)
    code, out, err = run(cloud)("audit")
    assert code == 0, err
    assert out == ["Audited 2 provider(s), 3 allocation(s): no orphaned allocations."]


def test_audit_finds_a_squatter_and_deletes_only_it(make_cloud, run) -> None:
    cloud, servers, migration = _busy_cloud(make_cloud)
    squatter = cloud.squat("host1", VCPU=2, MEMORY_MB=512)
    consumers = [s.uuid for s in servers] + [migration.uuid]
    ours = {c: cloud.holds(c) for c in consumers}
    usage = cloud.usage("host1")
    rp1 = cloud.hosts["host1"]

    code, out, _ = run(cloud)("audit")
    assert code == 3
    assert out == [
        f"orphan {squatter} on host1 ({rp1}): MEMORY_MB:512,VCPU:2: "
        "neither a server nor a migration of ours",
        "Audited 2 provider(s), 4 allocation(s): 1 orphaned, 0 deleted, 1 left.",
    ]
    assert cloud.holds(squatter) != {}

    code, out, _ = run(cloud)("audit", "--delete")
    assert code == 0
    assert out[0].startswith(f"deleted {squatter} on host1 ({rp1}): MEMORY_MB:512,VCPU:2")
    assert out[1] == "Audited 2 provider(s), 4 allocation(s): 1 orphaned, 1 deleted, 0 left."
    assert cloud.holds(squatter) == {}
    expected_usage = dict(usage, VCPU=usage["VCPU"] - 2, MEMORY_MB=usage["MEMORY_MB"] - 512)
    assert cloud.usage("host1") == expected_usage
    assert {c: cloud.holds(c) for c in consumers} == ours
    del cloud.squatters[squatter]
    cloud.check()

    code, out, _ = run(cloud)("audit")
    assert code == 0
    assert out == ["Audited 2 provider(s), 3 allocation(s): no orphaned allocations."]


def test_audit_delete_keeps_our_servers_rightful_allocation(make_cloud, run) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    server = cloud.boot("vm", _flavor(cloud, "old", OLD), host="host1")
    held = cloud.observer.get_allocations(server.uuid)
    leaked = {**held.allocations, **cloud.on("host2", {"VCPU": 1})}
    cloud.observer.put_allocations(
        server.uuid, ConsumerWrite(leaked, "project-a", "user-a", held.generation)
    )

    code, out, _ = run(cloud)("audit", "--delete")
    assert code == 0
    assert out[0] == (
        f"deleted {server.uuid} on host2 ({cloud.hosts['host2']}): VCPU:1: server runs on host1"
    )
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    generation = cloud.observer.get_allocations(server.uuid).generation
    assert cloud.db.server_get(server.uuid).placement_generation == generation
    cloud.check()


@pytest.mark.parametrize(
    ("before", "detail"),
    [
        (True, "changed since it was listed; audit again"),
        (False, "changed in Placement meanwhile (generation conflict); audit again"),
    ],
)
def test_audit_delete_leaves_a_consumer_that_changed(make_cloud, before, detail) -> None:
    cloud = make_cloud()
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    squatter = cloud.squat("host1", VCPU=2)
    client = _Racing(cloud.client, squatter, _someone_writes(cloud, squatter, {"VCPU": 3}), before)
    report = audit.audit(cloud.db, client, owner_trait=DEFAULT_OWNER_TRAIT, delete=True)
    assert [(o.consumer, o.outcome, o.detail) for o in report.orphans] == [
        (squatter, audit.LEFT, detail)
    ]
    assert cloud.holds(squatter) == cloud.on("host1", {"VCPU": 3})
    cloud.check()


# -- the client call audit reads --------------------------------------------------------


def test_get_provider_allocations(make_cloud) -> None:
    cloud = make_cloud()
    rp = cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    server = cloud.boot("vm", _flavor(cloud, "old", OLD))
    squatter = cloud.squat("host1", VCPU=2)
    assert cloud.observer.get_provider_allocations(rp) == {server.uuid: OLD, squatter: {"VCPU": 2}}
    with pytest.raises(exception.PlacementNotFound):
        cloud.observer.get_provider_allocations(str(uuid.uuid4()))


# -- the command line -------------------------------------------------------------------


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert manage.main(["placement", "heal", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--dry-run" in text and "1 a server is still missing its allocation" in text
    assert manage.main(["placement", "audit", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--delete" in text and "3 orphans found and left in place" in text


def test_placement_down_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = fresh_sqlite_database(tmp_path)
    db.dispose()
    config = tmp_path / "manage.conf"
    config.write_text(
        f"[database]\nconnection = sqlite:///{tmp_path}/resize_sched.sqlite\n\n"
        "[placement]\nauth_type = admin_token\nendpoint = http://127.0.0.1:1\ntoken = admin\n"
        "connect_retries = 0\n"
    )
    handlers, level = logging.root.handlers[:], logging.root.level
    try:
        assert manage.main(["--config-file", str(config), "placement", "audit"]) == 1
    finally:
        logging.root.handlers[:], logging.root.level = handlers, level
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("resize-sched-manage: error: Placement is unavailable")
    )
