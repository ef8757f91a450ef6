"""AggregateMultiTenancyIsolation: aggregates kept for some projects."""

from oslo_log import log as logging

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

_PREFIX = "filter_tenant_id"


class AggregateMultiTenancyIsolation(BaseHostFilter):
    """A host in an aggregate whose metadata has ``filter_tenant_id`` keys
    (``filter_tenant_id``, ``filter_tenant_id2``...; each value a project id
    or a comma-separated list) takes only servers of those projects. Hosts
    in no such aggregate take every project's."""

    needs = frozenset({hs.AGGREGATES})
    run_filter_once_per_request = True

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        allowed: set[str] = set()
        for key, values in host_state.aggregate_metadata().items():
            if key.startswith(_PREFIX):
                allowed |= values
        if not allowed or request.project_id in allowed:
            return True
        LOG.debug("%s: kept for project(s) %s", host_state.host, sorted(allowed))
        return False
