"""The conductor's endpoint of a compute service's periodic report."""

from typing import Any

from resize_sched import exception
from resize_sched.conductor import reports
from resize_sched.conductor.endpoints.checks import LOG, handler
from resize_sched.conductor.endpoints.evacuations import EvacuationEndpoints
from resize_sched.context import RequestContext


class ComputeReportEndpoints(EvacuationEndpoints):
    """``compute_report``: a host that reports is back, so the sources of
    the servers evacuated from it are given back (:class:`.EvacuationEndpoints`)."""

    @handler
    def compute_report(
        self,
        ctxt: RequestContext,
        host: str,
        node: str,
        rp_uuid: str,
        inventory: dict[str, Any],
        provider_generation: int | None,
        service_version: str,
        children: dict[str, Any] | None = None,
    ) -> None:
        """A compute service's heartbeat and compute node (:mod:`.reports`).

        ``children`` from 1.3; a 1.2 report has none (see the rpcapi's history).
        """
        try:
            reports.record(
                self.db,
                self.deps.client,
                self.deps.conf.placement.deployment_name,
                host=host,
                node=node,
                rp_uuid=rp_uuid,
                inventory=inventory,
                provider_generation=provider_generation,
                version=service_version,
                children=children,
            )
        except exception.PlacementError as exc:
            LOG.warning("Report of %s not recorded (the next one will be): %s", host, exc)
            return
        except ValueError as exc:  # blank or over-long names
            LOG.warning("Malformed compute_report message dropped: %s", exc)
            return
        self._sources_back(ctxt, host)
