"""``resize-sched-manage placement audit``/``heal`` and ``host`` in a shared Placement.

Beside our hosts, the real Placement holds another service's provider and a
second deployment's host, each with a consumer of its owner's (see
:class:`tests.functional.scheduler.test_ownership.Strangers`). The commands
run in-process through :func:`resize_sched.cmd.manage.main` and must never
list, change or delete anything there.
"""

import uuid
from typing import Any

from resize_sched import resources as rs
from resize_sched.cmd import manage
from resize_sched.placement.client import ConsumerWrite
from resize_sched.placement.embedded import DEFAULT_OWNER_TRAIT
from tests.functional.fixtures.cloud import Cloud
from tests.functional.fixtures.placement import PlacementInProcess
from tests.functional.scheduler.test_ownership import OTHER_DEPLOYMENT, Strangers

OLD = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


def _cloud(placement: PlacementInProcess, make_cloud: Any) -> tuple[Cloud, Strangers, Any]:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=8, memory_mb=16384, disk_gb=100)
    cloud.add_host("host2", vcpus=8, memory_mb=8192, disk_gb=100)
    strangers = Strangers(placement, cloud.observer)
    flavor = cloud.flavor("old", OLD["VCPU"], OLD["MEMORY_MB"], OLD["DISK_GB"])
    server = cloud.boot("vm", flavor, host="host1")
    return cloud, strangers, server


# -- audit -------------------------------------------------------------------------------


def test_audit_and_delete_see_only_our_providers(
    placement: PlacementInProcess, make_cloud: Any, run: Any
) -> None:
    cloud, strangers, server = _cloud(placement, make_cloud)
    squatter = cloud.squat("host2", VCPU=1)
    # Someone else's consumer holding on one of our hosts and on theirs.
    straddler = str(uuid.uuid4())
    nova_big = strangers.providers["nova-big"]
    straddles = {**cloud.on("host1", {"VCPU": 1}), nova_big: {"VCPU": 1}}
    cloud.observer.put_allocations(straddler, ConsumerWrite(straddles, "nova", "nova", None))
    nova_big_usage = cloud.observer.get_usages(nova_big)
    strangers.before = strangers.snapshot()  # with the straddler's part

    code, out, err = run(cloud)("placement", "audit")
    assert code == manage.EXIT_ORPHANS_LEFT, err
    text = "\n".join(out)
    assert out[-1] == "Audited 2 provider(s), 3 allocation(s): 2 orphaned, 0 deleted, 2 left."
    assert f"orphan {squatter} on host2" in text
    assert f"orphan {straddler} on host1" in text
    for name, consumer in strangers.consumers.items():
        assert name not in text and consumer not in text
    strangers.untouched(straddler)

    code, out, err = run(cloud)("placement", "audit", "--delete")
    assert code == 0, err
    assert out[-1] == "Audited 2 provider(s), 3 allocation(s): 2 orphaned, 2 deleted, 0 left."
    assert cloud.holds(squatter) == {}
    # Only the part on our host went; what it holds on theirs is kept.
    assert cloud.holds(straddler) == {nova_big: {"VCPU": 1}}
    assert cloud.observer.get_usages(nova_big) == nova_big_usage
    assert cloud.holds(server.uuid) == cloud.on("host1", OLD)
    strangers.untouched(straddler)

    code, out, _ = run(cloud)("placement", "audit")
    assert (code, out) == (0, ["Audited 2 provider(s), 1 allocation(s): no orphaned allocations."])


def test_audit_of_another_deployment_sees_only_its_hosts(
    placement: PlacementInProcess, make_cloud: Any, run: Any
) -> None:
    """The same commands, configured as the other deployment, see only its host."""
    cloud, strangers, _server = _cloud(placement, make_cloud)
    code, out, err = run(cloud, OTHER_DEPLOYMENT)("placement", "audit")
    # Its consumer is unknown to our database, so it is listed, and only it.
    assert code == manage.EXIT_ORPHANS_LEFT, err
    assert out == [
        f"orphan {strangers.consumers['other-big']} on other-big "
        f"({strangers.providers['other-big']}): MEMORY_MB:4096,VCPU:2: "
        "neither a server nor a migration of ours",
        "Audited 1 provider(s), 1 allocation(s): 1 orphaned, 0 deleted, 1 left.",
    ]
    strangers.untouched()


# -- heal --------------------------------------------------------------------------------


def test_heal_writes_only_our_providers(
    placement: PlacementInProcess, make_cloud: Any, run: Any
) -> None:
    cloud, strangers, server = _cloud(placement, make_cloud)
    nova_big = strangers.providers["nova-big"]
    # Our server's allocation is lost, and it holds something on theirs too.
    held = cloud.observer.get_allocations(server.uuid)
    write = ConsumerWrite({nova_big: {"DISK_GB": 5}}, "project-a", "user-a", held.generation)
    cloud.observer.put_allocations(server.uuid, write)
    nova_big_usage = cloud.observer.get_usages(nova_big)
    strangers.before = strangers.snapshot()  # with our server's part
    # A server recorded on a provider that is not ours is never healed there.
    stray = cloud.boot("stray", cloud.flavor("stray", 1, 1024, 10), host="host2")
    cloud.observer.delete_allocations(stray.uuid)
    other_big = strangers.providers["other-big"]
    cloud.db.server_update(stray.uuid, rp_uuid=other_big, host="other-big", node="other-big")

    code, out, err = run(cloud)("placement", "heal")
    assert code == 1, err
    assert out == [
        f"healed {server.uuid} on host1: {rs.format_resources(OLD)}",
        f"still missing {stray.uuid} on other-big: its provider {other_big} is not a host "
        "of this deployment",
        "1 healed, 1 still missing, 0 ok, 0 skipped (resize in flight).",
    ]
    # Healed on our host; what it holds on theirs is as it was.
    assert cloud.holds(server.uuid) == {**cloud.on("host1", OLD), nova_big: {"DISK_GB": 5}}
    assert cloud.observer.get_usages(nova_big) == nova_big_usage
    assert cloud.holds(stray.uuid) == {}
    strangers.untouched(server.uuid)

    # Theirs does not count: the healed server is ok now.
    code, out, _ = run(cloud)("placement", "heal", "--dry-run")
    assert out[-1].endswith("0 would heal, 1 still missing, 1 ok, 0 skipped (resize in flight).")
    strangers.untouched(server.uuid)


# -- host disable / enable ----------------------------------------------------------------


def test_host_disable_and_enable(placement: PlacementInProcess, make_cloud: Any, run: Any) -> None:
    cloud, strangers, _server = _cloud(placement, make_cloud)
    host1 = cloud.hosts["host1"]
    code, out, err = run(cloud)("host", "disable", "host1")
    assert (code, out) == (0, ["Host host1 disabled."]), err
    traits, _ = cloud.observer.get_traits(host1)
    assert traits == {DEFAULT_OWNER_TRAIT, "COMPUTE_STATUS_DISABLED"}
    code, out, _ = run(cloud)("host", "disable", "host1")
    assert (code, out) == (0, ["Host host1 was already disabled."])

    flavor = cloud.flavor("small", 1, 512, 1)
    assert cloud.boot("vm2", flavor).host == "host2"  # host1 is emptier, but disabled

    code, out, _ = run(cloud)("host", "enable", "host1")
    assert (code, out) == (0, ["Host host1 enabled."])
    assert cloud.observer.get_traits(host1)[0] == {DEFAULT_OWNER_TRAIT}

    # Hosts that are not ours cannot be disabled from here.
    for name in ("nova-big", "other-big", "nowhere"):
        code, out, err = run(cloud)("host", "disable", name)
        assert code == 1 and out == []
        assert f"host {name} with the owner trait {DEFAULT_OWNER_TRAIT}" in err
    strangers.untouched()
