"""CPUWeigher: free vCPUs."""

from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from resize_sched.scheduler.weights import BaseHostWeigher


class CPUWeigher(BaseHostWeigher):
    """Free vCPUs on the host's root, the allocation ratio applied;
    ``[filter_scheduler] cpu_weight_multiplier``."""

    minval = 0
    multiplier_option = "cpu_weight_multiplier"

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        return host_state.free_vcpus
