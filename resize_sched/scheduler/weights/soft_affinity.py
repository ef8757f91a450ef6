"""ServerGroupSoftAffinityWeigher: toward the hosts of a soft-affinity group."""

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters._group import members_on_host
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from resize_sched.scheduler.weights import BaseHostWeigher


class ServerGroupSoftAffinityWeigher(BaseHostWeigher):
    """For a member of a ``soft-affinity`` group: how many other members
    the host holds (the moved server itself not counted);
    ``[filter_scheduler] soft_affinity_weight_multiplier``. Other requests: 0."""

    needs = frozenset({hs.SERVERS})
    multiplier_option = "soft_affinity_weight_multiplier"
    policy = "soft-affinity"
    sign = 1

    def neutral(self, request: SchedulingRequest) -> bool:
        group = request.group
        return group is None or group.policy != self.policy or super().neutral(request)

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        if self.neutral(request):
            return 0
        return self.sign * members_on_host(host_state, request)
