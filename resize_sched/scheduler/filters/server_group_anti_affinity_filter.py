"""ServerGroupAntiAffinityFilter: an ``anti-affinity`` group's members spread over hosts.

At most ``max_server_per_host`` of them on one host.
"""

from oslo_log import log as logging

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.filters._group import members_on_host
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


class ServerGroupAntiAffinityFilter(BaseHostFilter):
    """A host passes for a member of an ``anti-affinity`` group while fewer
    than the group's ``max_server_per_host`` rule (1 without it) of the other
    members are on it. On a move the moved server's own host passes: the
    server is there already and leaves it (as in Nova)."""

    needs = frozenset({hs.SERVERS})

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        return (
            self.needs
            if request.group is not None and request.group.policy == "anti-affinity"
            else frozenset()
        )

    def passes_every_host(self, request: SchedulingRequest) -> bool:
        """No anti-affinity group: every host passes."""
        group = request.group
        return group is None or group.policy != "anti-affinity"

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        group = request.group
        if group is None or group.policy != "anti-affinity":
            return True
        if request.server_uuid is not None and request.server_uuid in host_state.servers:
            return True
        limit = int((group.rules or {}).get("max_server_per_host", 1))
        found = members_on_host(host_state, request)
        if found < limit:
            return True
        LOG.debug(
            "%s: holds %d member(s) of anti-affinity group %s (at most %d)",
            host_state.host,
            found,
            group.uuid,
            limit,
        )
        return False
