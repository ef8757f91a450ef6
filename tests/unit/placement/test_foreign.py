"""The split of a consumer's allocations into ours and another service's."""

from resize_sched.placement import foreign

ROOT, BRIDGE, GPU = "root", "bridge", "gpu"
HELD = {
    ROOT: {"VCPU": 2, "MEMORY_MB": 2048, "CUSTOM_LICENSE_SEAT": 1},
    GPU: {"VGPU": 1},
    BRIDGE: {"NET_BW_EGR_KILOBIT_PER_SEC": 1000},
}


def test_the_classes_of_the_flavors_are_ours_wherever_they_are_held():
    ours = foreign.classes({"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 0}, {"VGPU": 1}, None)
    assert ours == {"VCPU", "MEMORY_MB", "VGPU"}
    mine, theirs = foreign.split(HELD, ours)
    assert mine == {ROOT: {"VCPU": 2, "MEMORY_MB": 2048}, GPU: {"VGPU": 1}}
    assert theirs == {ROOT: {"CUSTOM_LICENSE_SEAT": 1}, BRIDGE: HELD[BRIDGE]}
    assert foreign.merge(mine, theirs) == HELD


def test_a_merge_with_nothing_foreign_is_ours_alone():
    assert foreign.merge({ROOT: {"VCPU": 1, "DISK_GB": 0}}, {}) == {ROOT: {"VCPU": 1}}
    assert foreign.merge({}, {BRIDGE: {"NET_BW_EGR_KILOBIT_PER_SEC": 5}}) == {
        BRIDGE: {"NET_BW_EGR_KILOBIT_PER_SEC": 5}
    }
