"""ServerGroupSoftAntiAffinityWeigher: away from the hosts of a soft-anti-affinity group."""

from resize_sched.scheduler.weights.soft_affinity import ServerGroupSoftAffinityWeigher


class ServerGroupSoftAntiAffinityWeigher(ServerGroupSoftAffinityWeigher):
    """For a member of a ``soft-anti-affinity`` group: minus how many other
    members the host holds; ``[filter_scheduler]
    soft_anti_affinity_weight_multiplier``. Other requests: 0."""

    multiplier_option = "soft_anti_affinity_weight_multiplier"
    policy = "soft-anti-affinity"
    sign = -1
