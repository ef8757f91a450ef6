"""AvailabilityZoneFilter: the zone the server is asked into."""

from oslo_log import log as logging

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

_KEY = "availability_zone"


class AvailabilityZoneFilter(BaseHostFilter):
    """With ``request.availability_zone`` set, a host passes when one of its
    aggregates' ``availability_zone`` metadata names that zone, or, in no
    zoned aggregate, when the zone is ``[DEFAULT] default_availability_zone``.

    The zone is also asked of Placement as ``member_of`` (the zone's
    aggregates), which leaves the wrong hosts out before they cost anything;
    this filter is for an operator who wants the check on the database's
    aggregates too.
    """

    needs = frozenset({hs.AGGREGATES})
    run_filter_once_per_request = True

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        return self.needs if bool(request.availability_zone) else frozenset()

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        zone = request.availability_zone
        if not zone:
            return True
        zones = host_state.aggregate_metadata().get(_KEY)
        if not zones:
            default = self.conf.default_availability_zone if self.conf is not None else "nova"
            zones = {default}
        if zone in zones:
            return True
        LOG.debug("%s: in zone(s) %s, not %s", host_state.host, sorted(zones), zone)
        return False
