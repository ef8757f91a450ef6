"""SameHostFilter: the ``same_host`` hint."""

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.filters._hints import hinted_servers
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest


class SameHostFilter(BaseHostFilter):
    """With a ``same_host`` hint (a server uuid or a list of them), only the
    hosts holding at least one of those servers pass; without it, every host."""

    needs = frozenset({hs.SERVERS})
    run_filter_once_per_request = True

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        return self.needs if bool(hinted_servers(request, "same_host")) else frozenset()

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        wanted = hinted_servers(request, "same_host")
        return not wanted or bool(wanted & host_state.servers)
