"""ServerGroupAffinityFilter: a member of an ``affinity`` group goes where its group is."""

from oslo_log import log as logging

from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


class ServerGroupAffinityFilter(BaseHostFilter):
    """For a member of an ``affinity`` group whose other members are placed
    (``GroupPolicy.hosts``), only those hosts pass; the first member goes
    anywhere. On a move ``hosts`` holds the moved server's own host, so its
    source passes (as Nova's ``instance_group.hosts``)."""

    def passes_every_host(self, request: SchedulingRequest) -> bool:
        """No affinity group with a host yet: every host passes."""
        group = request.group
        return group is None or group.policy != "affinity" or not group.hosts

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        group = request.group
        if group is None or group.policy != "affinity" or not group.hosts:
            return True
        if host_state.host in group.hosts:
            return True
        LOG.debug("%s: not a host of affinity group %s", host_state.host, group.uuid)
        return False
