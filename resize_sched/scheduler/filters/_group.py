"""What the server-group filters and weighers share."""

from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest


def members_on_host(host_state: HostState, request: SchedulingRequest) -> int:
    """How many members of the request's group are on the host, the
    scheduled server itself left out (on a move it does not count against
    its own host, as in Nova)."""
    group = request.group
    if group is None:
        return 0
    members = host_state.servers & group.members
    if request.server_uuid is not None:
        members = members - {request.server_uuid}
    return len(members)
