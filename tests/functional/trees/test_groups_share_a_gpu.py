"""Two numbered groups on one GPU (``group_policy=none``) swap sizes.

``resources1:VGPU=2, resources2:VGPU=1`` -> ``1`` and ``2``, both groups on
the host's one GPU: the GPU holds 3 vGPUs before and after, so 3 is the
most a same-host resize ever needs there. ``max_flavor`` takes max(old, new)
per provider (what the GPU ends up holding), not per group (which would add
group 2's growth on top of group 1's shrink: 4).
"""

import pytest

from tests.functional.trees.topology import add_child

ROOT = {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 10}


def _flavor(cloud, name, first, second):
    specs = {"resources1:VGPU": str(first), "resources2:VGPU": str(second), "group_policy": "none"}
    return cloud.flavor(name, 2, 2048, 10, extra_specs=specs)


def _cloud(make_cloud, strategy, vgpus):
    cloud = make_cloud(strategy, resize={"allow_same_host": True})
    cloud.add_host("host1", vcpus=8, memory_mb=8192, disk_gb=100)
    return cloud, add_child(cloud, "host1", "pgpu0", {"VGPU": vgpus}, ours=True)


@pytest.mark.parametrize("decision", ["confirm", "revert"])
@pytest.mark.parametrize("vgpus", [3, 4])
@pytest.mark.parametrize(
    "strategy", ["max_flavor", pytest.param("drop_and_reclaim", marks=pytest.mark.slow)]
)
def test_swapping_groups_on_one_gpu_needs_no_more_than_it_holds(
    make_cloud, strategy, vgpus, decision
):
    cloud, gpu = _cloud(make_cloud, strategy, vgpus)
    root = cloud.hosts["host1"]
    server = cloud.boot("vm", _flavor(cloud, "old", 2, 1), host="host1")
    held = {root: ROOT, gpu: {"VGPU": 3}}
    assert cloud.holds(server.uuid) == held
    assert cloud.db.server_get(server.uuid).group_providers == {"1": [gpu], "2": [gpu], "": [root]}

    migration, dest = cloud.resize_to_verify(server, _flavor(cloud, "new", 1, 2))
    assert dest.same_host
    # max(old, new) on the GPU is 3, whatever room is left beside it.
    assert cloud.holds(server.uuid) == held
    assert cloud.holds(migration.uuid) == {}
    getattr(cloud, decision)(server)
    assert cloud.holds(server.uuid) == held
    assert cloud.holds(migration.uuid) == {}
    assert cloud.db.server_get(server.uuid).group_providers == {"1": [gpu], "2": [gpu], "": [root]}
