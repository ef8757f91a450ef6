"""ComputeFilter: only hosts whose compute service is enabled and up."""

import datetime
from collections.abc import Iterable

from oslo_log import log as logging

from resize_sched.scheduler.filters import BaseHostFilter
from resize_sched.scheduler.host_state import HostState
from resize_sched.scheduler.request import SchedulingRequest

LOG = logging.getLogger(__name__)


class ComputeFilter(BaseHostFilter):
    """A host passes when its compute service is not disabled and has
    reported within ``[DEFAULT] service_down_time`` (and is not forced down).

    A host whose service row is unknown (no database, or a provider its
    service has not reported yet) passes: Placement's
    ``COMPUTE_STATUS_DISABLED`` trait already kept a disabled host out.
    """

    run_filter_once_per_request = True

    def filter_all(
        self, host_states: Iterable[HostState], request: SchedulingRequest
    ) -> list[HostState]:
        """The host states that pass, judged at one moment (the clock and
        the option read once for all hosts)."""
        down_time = self._down_time()
        now = datetime.datetime.now(datetime.UTC)
        return [h for h in host_states if self._passes(h, down_time, now)]

    def host_passes(self, host_state: HostState, request: SchedulingRequest) -> bool:
        return self._passes(host_state, self._down_time(), None)

    def _down_time(self) -> float:
        return self.conf.service_down_time if self.conf is not None else 60

    @staticmethod
    def _passes(host_state: HostState, down_time: float, now: datetime.datetime | None) -> bool:
        if not host_state.service_known:
            return True
        if host_state.disabled:
            LOG.debug("%s: its compute service is disabled", host_state.host)
            return False
        if not host_state.is_up(down_time, now):
            LOG.warning("%s: its compute service is down", host_state.host)
            return False
        return True
