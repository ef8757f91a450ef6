"""RAMWeigher: free memory."""

from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from resize_sched.scheduler.weights import BaseHostWeigher


class RAMWeigher(BaseHostWeigher):
    """Free memory on the host's root (Placement's capacity less usage);
    ``[filter_scheduler] ram_weight_multiplier``: positive spreads, negative
    packs."""

    minval = 0
    multiplier_option = "ram_weight_multiplier"

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        return host_state.free_ram_mb
