"""BuildFailureWeigher: hosts whose last builds failed."""

from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest
from resize_sched.scheduler.weights import BaseHostWeigher


class BuildFailureWeigher(BaseHostWeigher):
    """Minus the builds that failed on the host in a row
    (``compute_nodes.failed_builds``, reset by a successful build);
    ``[filter_scheduler] build_failure_weight_multiplier``."""

    multiplier_option = "build_failure_weight_multiplier"

    def _weigh_object(self, host_state: HostState, request: SchedulingRequest) -> float:
        return -host_state.failed_builds
