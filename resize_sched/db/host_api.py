"""Data API for services and compute nodes (a mixin of ``Database``).

A compute service reports itself (through the conductor) every
``[compute] update_interval`` seconds: its service row's heartbeat and its
compute node, the resource provider it registered and the inventory it set
there. The scheduler reads compute nodes to name hosts and to judge "could
this ever fit, empty" without a Placement request per provider; the
``os-services`` and ``os-hypervisors`` APIs read both.
"""

import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.session import SessionSource, text

#: The binary name a compute service's row carries (as Nova's ``nova-compute``).
COMPUTE_BINARY = "resize-sched-compute"


class HostApi(SessionSource):
    """Services and compute nodes."""

    def compute_node_report(
        self,
        *,
        host: str,
        node: str,
        rp_uuid: str,
        inventory: Mapping[str, Mapping[str, Any]],
        provider_generation: int | None = None,
        hypervisor_type: str = "fake",
        version: str | None = None,
    ) -> tuple[models.Service, models.ComputeNode]:
        """Record one report of a compute service: heartbeat and compute node.

        Creates the service and node rows on the first report. A node whose
        provider was re-created (a new ``rp_uuid`` for the same node name) is
        replaced. An older report (a lower provider generation than recorded)
        does not overwrite a newer inventory.

        :returns: the service and compute node as now stored.
        """
        host = text(host, "host")
        node = text(node, "node")
        now = models.utcnow()
        with self._writer() as session:
            service = session.scalars(
                sa.select(models.Service).where(
                    models.Service.host == host, models.Service.binary == COMPUTE_BINARY
                )
            ).one_or_none()
            if service is None:
                service = models.Service(
                    uuid=str(uuidlib.uuid4()),
                    host=host,
                    binary=COMPUTE_BINARY,
                    topic="compute",
                    disabled=False,
                    forced_down=False,
                    report_count=0,
                )
                session.add(service)
            service.report_count = (service.report_count or 0) + 1
            service.last_seen_up = now
            service.updated_at = now
            if version is not None:
                service.version = version

            compute = session.scalars(
                sa.select(models.ComputeNode).where(
                    sa.or_(
                        models.ComputeNode.uuid == rp_uuid,
                        sa.and_(
                            models.ComputeNode.host == host,
                            models.ComputeNode.hypervisor_hostname == node,
                        ),
                    )
                )
            ).all()
            current = next((c for c in compute if c.uuid == rp_uuid), None)
            for stale in compute:
                if stale is not current:
                    session.delete(stale)
            if current is None:
                session.flush()
                current = models.ComputeNode(
                    uuid=rp_uuid, host=host, hypervisor_hostname=node, inventory={}
                )
                session.add(current)
            older = (
                provider_generation is not None
                and current.provider_generation is not None
                and provider_generation < current.provider_generation
            )
            if not older:
                current.inventory = {rc: dict(rec) for rc, rec in inventory.items()}
                current.provider_generation = provider_generation
            current.host = host
            current.hypervisor_hostname = node
            current.hypervisor_type = hypervisor_type
            current.reported_at = now
            session.flush()
            return service, current

    def compute_node_list(self) -> list[models.ComputeNode]:
        """Every compute node, oldest first."""
        with self._reader() as session:
            return list(
                session.scalars(sa.select(models.ComputeNode).order_by(models.ComputeNode.id))
            )

    def compute_node_get(self, rp_uuid: str) -> models.ComputeNode:
        """One compute node by its provider's uuid.

        :raises NotFound: no such node.
        """
        with self._reader() as session:
            found = session.scalars(
                sa.select(models.ComputeNode).where(models.ComputeNode.uuid == rp_uuid)
            ).one_or_none()
        if found is None:
            raise exception.NotFound(what=f"compute node {rp_uuid}")
        return found

    def service_list(self, *, binary: str | None = None) -> list[models.Service]:
        """Every service (of ``binary``, when given), oldest first."""
        query = sa.select(models.Service).order_by(models.Service.id)
        if binary is not None:
            query = query.where(models.Service.binary == binary)
        with self._reader() as session:
            return list(session.scalars(query))
