"""DifferentHostFilter: the ``different_host`` hint."""

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.filters._hints import hinted_servers
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest


class DifferentHostFilter(BaseHostFilter):
    """With a ``different_host`` hint (a server uuid or a list of them), only
    the hosts holding none of those servers pass."""

    needs = frozenset({hs.SERVERS})
    run_filter_once_per_request = True

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        return self.needs if bool(hinted_servers(request, "different_host")) else frozenset()

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        avoid = hinted_servers(request, "different_host")
        return not (avoid & host_state.servers)
