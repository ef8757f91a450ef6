"""``resize-sched-manage host holders HOST``: what still holds a host being drained.

Run in-process through :func:`resize_sched.cmd.manage.main` against the real
Placement and a fresh database, while a cold migration drains host1.
"""

from typing import Any

FLAVOR = {"VCPU": 1, "MEMORY_MB": 1024, "DISK_GB": 10}


def test_a_host_is_held_until_its_migration_is_confirmed(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud("max_flavor")
    for name in ("host1", "host2"):
        cloud.add_host(name, vcpus=4, memory_mb=4096, disk_gb=100)
    flavor = cloud.flavor("small", 1, 1024, 10)
    server = cloud.boot("vm", flavor, host="host1")
    squatter = cloud.squat("host1", VCPU=1)
    manage = run(cloud)

    code, lines, _ = manage("host", "holders", "host1")
    assert code == 2
    assert lines[0] == "servers on host1: 1"
    assert lines[1] == f"  server {server.uuid} vm ACTIVE"
    assert "moves in flight from or to host1: 0" in lines
    assert f"  host1: {server.uuid} (server) DISK_GB:10,MEMORY_MB:1024,VCPU:1" in lines
    assert f"  host1: {squatter} (not a server or move of ours) VCPU:1" in lines

    migration, _ = cloud.migrate(server)
    cloud.migrations.finish(migration.uuid)
    code, lines, _ = manage("host", "holders", "host1")
    assert code == 2
    assert "servers on host1: 0" in lines
    assert (
        f"  migration {migration.uuid} (migration) server={server.uuid} "
        "status=finished host1->host2"
    ) in lines
    assert (
        f"  host1: {migration.uuid} (migration of server {server.uuid}) "
        "DISK_GB:10,MEMORY_MB:1024,VCPU:1"
    ) in lines

    cloud.confirm(server)
    cloud.leave(squatter)
    code, lines, _ = manage("host", "holders", "host1")
    assert code == 0
    assert lines[-1] == "host1 is empty: nothing holds it."
    assert "allocations in Placement on host1: 0" in lines
    code, lines, _ = manage("host", "holders", "host2")
    assert code == 2 and "servers on host2: 1" in lines


def test_an_unknown_host_is_an_error(make_cloud: Any, run: Any) -> None:
    cloud = make_cloud("max_flavor")
    cloud.add_host("host1", vcpus=4, memory_mb=4096, disk_gb=100)
    code, lines, err = run(cloud)("host", "holders", "nowhere")
    assert code == 1 and lines == []
    assert "nowhere" in err
