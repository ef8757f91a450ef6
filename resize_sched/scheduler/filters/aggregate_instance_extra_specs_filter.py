"""AggregateInstanceExtraSpecsFilter: flavor extra specs against host aggregate metadata."""

from oslo_log import log as logging

from resize_sched.scheduler import host_state as hs
from resize_sched.scheduler.filters import BaseHostFilter, extra_specs_ops
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

_SCOPE = "aggregate_instance_extra_specs"


class AggregateInstanceExtraSpecsFilter(BaseHostFilter):
    """A host passes when, for every extra spec of the flavor that is
    unscoped or scoped ``aggregate_instance_extra_specs:``, some value of that
    key in its aggregates' metadata matches it (the operators of
    :mod:`~resize_sched.scheduler.filters.extra_specs_ops`). Keys of other
    scopes (``hw:``, ``resources:``, ``trait:``...) are not this filter's."""

    needs = frozenset({hs.AGGREGATES})
    run_filter_once_per_request = True

    def needs_for(self, request: SchedulingRequest) -> frozenset[str]:
        return self.needs if bool((request.flavor or {}).get("extra_specs")) else frozenset()

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        specs = (request.flavor or {}).get("extra_specs") or {}
        if not specs:
            return True
        metadata = host_state.aggregate_metadata()
        for key, requirement in specs.items():
            scope = key.split(":", 1)
            if len(scope) > 1:
                if scope[0] != _SCOPE:
                    continue
                key = scope[1]
            values = metadata.get(key)
            if not values:
                LOG.debug("%s: no aggregate metadata %s for %s", host_state.host, key, requirement)
                return False
            if not any(extra_specs_ops.match(v, str(requirement)) for v in values):
                LOG.debug(
                    "%s: aggregate metadata %s=%s does not meet %r",
                    host_state.host,
                    key,
                    sorted(values),
                    requirement,
                )
                return False
        return True
