"""DiskWeigher: free disk."""

from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from resize_sched.scheduler.weights import BaseHostWeigher


class DiskWeigher(BaseHostWeigher):
    """Free disk on the host's root (a disk on a sharing pool is not the
    host's and weighs nothing); ``[filter_scheduler] disk_weight_multiplier``."""

    minval = 0
    multiplier_option = "disk_weight_multiplier"

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        return host_state.free_disk_mb
