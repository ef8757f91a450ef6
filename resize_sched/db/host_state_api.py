"""Data API for the scheduler's host states (a mixin of ``Database``).

What the filters and weighers know of a candidate host comes from here, read
once per scheduling request for every candidate together: one query for the
compute nodes with their service rows, and, only when an enabled filter or
weigher needs them, one for the hosts' aggregates with their metadata and
one for the servers on them. Never a query per host.

The build flow keeps ``compute_nodes.failed_builds`` (the
BuildFailureWeigher's count) with :meth:`HostStateApi.record_build_result`.
"""

from collections.abc import Iterable
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.orm import Session

from resize_sched.db import models
from resize_sched.db.host_api import NodeRow, select_node_rows
from resize_sched.db.session import SessionSource, writes

#: Values per ``IN (...)``.
_CHUNK = 500

#: Provider uuids per ``IN (...)`` of the compute node read: a whole
#: candidates answer (``[scheduler] max_placement_results``, 1,000 by
#: default) in one statement, where each statement costs the server its own
#: parse and plan. SQLite keeps :data:`_CHUNK`: builds older than 3.32
#: refuse more than 999 bound values.
_NODE_CHUNK = 1000


class AggregateRow(NamedTuple):
    """An aggregate a host is in, with its metadata."""

    uuid: str
    name: str
    metadata: dict[str, str]


def _chunks(values: Iterable[str], size: int = _CHUNK) -> list[list[str]]:
    wanted = sorted(set(values))
    return [wanted[i : i + size] for i in range(0, len(wanted), size)]


class HostStateApi(SessionSource):
    """Compute nodes, aggregates and servers by host, for the scheduler."""

    def host_state_nodes(
        self, uuids: Iterable[str], *, inventory: bool = True
    ) -> dict[str, NodeRow]:
        """The compute node of each provider with its service's flags.

        :param inventory: also read the nodes' inventories (False: the rows'
            ``inventory`` is empty).
        :returns: provider uuid -> row; providers no service reported are absent.
        """
        select = select_node_rows(inventory)
        out: dict[str, NodeRow] = {}
        of = NodeRow.of
        with self._reader() as session:
            size = _CHUNK if session.get_bind().dialect.name == "sqlite" else _NODE_CHUNK
            for chunk in _chunks(uuids, size):
                for row in session.execute(select, {"uuids": chunk}):
                    out[row[0]] = of(row)
        return out

    def host_aggregates(self, hosts: Iterable[str]) -> dict[str, list[AggregateRow]]:
        """The aggregates each host is in, with their metadata.

        :returns: host -> aggregates (hosts in none are absent).
        """
        agg, member, meta = models.Aggregate, models.AggregateHost, models.AggregateMetadata
        select = (
            sa.select(member.host, agg.id, agg.uuid, agg.name, meta.key, meta.value)
            .join(agg, agg.id == member.aggregate_id)
            .join(meta, meta.aggregate_id == agg.id, isouter=True)
        )
        found: dict[str, dict[int, AggregateRow]] = {}
        with self._reader() as session:
            for chunk in _chunks(hosts):
                for host, agg_id, uuid, name, key, value in session.execute(
                    select.where(member.host.in_(chunk))
                ):
                    row = found.setdefault(host, {}).setdefault(
                        agg_id, AggregateRow(uuid, name, {})
                    )
                    if key is not None:
                        row.metadata[key] = value
        return {host: list(rows.values()) for host, rows in found.items()}

    def servers_on_hosts(self, hosts: Iterable[str]) -> dict[str, set[str]]:
        """The uuids of the servers (not deleted) on each host.

        :returns: host -> server uuids (hosts with none are absent).
        """
        server = models.Server
        out: dict[str, set[str]] = {}
        with self._reader() as session:
            for chunk in _chunks(hosts):
                for host, uuid in session.execute(
                    sa.select(server.host, server.uuid).where(
                        server.host.in_(chunk), server.deleted_at.is_(None)
                    )
                ):
                    out.setdefault(host, set()).add(uuid)
        return out

    @writes
    def record_build_result(self, session: Session, rp_uuid: str, *, failed: bool) -> None:
        """Count a failed build on a compute node, or reset the count on a success.

        The BuildFailureWeigher reads the count; an unknown provider is a no-op.
        """
        record_build_result(session, rp_uuid, failed=failed)


def record_build_result(session: Session, rp_uuid: str, *, failed: bool) -> None:
    """:meth:`HostStateApi.record_build_result` inside the caller's transaction."""
    node = models.ComputeNode
    value = node.failed_builds + 1 if failed else 0
    update = sa.update(node).where(node.uuid == rp_uuid)
    if not failed:
        # NOTE: a success on a host with no failures writes nothing.
        update = update.where(node.failed_builds != 0)
    session.execute(update.values(failed_builds=value))
