"""ComputeCapabilitiesFilter: the flavor's ``capabilities:`` extra specs against the host."""

from typing import Any

from oslo_log import log as logging
from oslo_serialization import jsonutils

from resize_sched.scheduler.filters import BaseHostFilter, extra_specs_ops
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)

_SCOPE = "capabilities"


class ComputeCapabilitiesFilter(BaseHostFilter):
    """A host passes when every ``capabilities:<attr>[:<key>...]`` extra spec
    of the flavor matches the host state's attribute (nested keys walk into
    dicts or JSON text), with the operators of
    :mod:`~resize_sched.scheduler.filters.extra_specs_ops`. An unscoped key
    that names a host state attribute is checked too (Nova's old form);
    other scopes are left to their own filters.
    """

    run_filter_once_per_request = True

    def passes_every_host(self, request: SchedulingRequest) -> bool:
        """A flavor with no unscoped and no ``capabilities:`` extra spec
        passes everywhere."""
        specs = (request.flavor or {}).get("extra_specs") or {}
        return all(":" in key and key.split(":", 1)[0] != _SCOPE for key in specs)

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        specs = (request.flavor or {}).get("extra_specs") or {}
        for key, requirement in specs.items():
            scope = key.split(":")
            if len(scope) == 1:
                if not hasattr(host_state, key):
                    continue
            elif scope[0] != _SCOPE:
                continue
            else:
                scope = scope[1:]
            value = _capability(host_state, scope)
            if value is None or not extra_specs_ops.match(str(value), str(requirement)):
                LOG.debug(
                    "%s: capability %s=%r does not meet %r",
                    host_state.host,
                    ":".join(scope),
                    value,
                    requirement,
                )
                return False
        return True


def _capability(host_state: HostState, scope: list[str]) -> Any:
    value: Any = host_state
    for index, part in enumerate(scope):
        try:
            if value is None:
                return None
            if isinstance(value, dict):
                value = value.get(part)
            else:
                value = getattr(value, part, None)
            if isinstance(value, str) and index + 1 < len(scope):
                value = jsonutils.loads(value)
        except (AttributeError, ValueError):
            return None
    return value
