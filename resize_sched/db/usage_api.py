"""Data API for usage over a period of time (a mixin of ``Database``).

What ``os-simple-tenant-usage`` reads: the servers that ran during a
period, deleted ones included. A server runs from its ``launched_at`` (when
it first became ACTIVE) to its ``deleted_at`` (Nova's ``terminated_at``), or
until now; a server that never launched ran for no time and is left out, as
Nova leaves it out.
"""

import datetime

import sqlalchemy as sa

from resize_sched import exception
from resize_sched.db import models, project_scope
from resize_sched.db.session import SessionSource, select_rows


class UsageApi(SessionSource):
    """Servers by their lifetimes."""

    def servers_running_between(
        self,
        start: datetime.datetime,
        stop: datetime.datetime,
        *,
        project_id: project_scope.ProjectScope,
        limit: int | None = None,
        marker: str | None = None,
    ) -> list[models.Server]:
        """The servers that ran at some time between ``start`` and ``stop``.

        Launched before ``stop`` and not deleted before ``start`` (deleted
        servers included), ordered by project, then uuid: Nova's order, so
        that a page of them groups by project.

        :param start: the beginning of the period.
        :param stop: its end.
        :param project_id: only this project's, or :data:`~project_scope.ALL_PROJECTS`
            (never None: a missing project is refused, not read as every one).
        :param limit: at most this many.
        :param marker: the uuid of the last server of the previous page (it
            may have been deleted since); the page starts after it.
        :returns: the servers.
        :raises ServerNotFound: no server has the marker's uuid.
        :raises ProjectRequired: no project and not ALL_PROJECTS.
        """
        server = models.Server
        order = (server.project_id, server.uuid)
        condition = project_scope.project_condition(server.project_id, project_id, "usage")
        with self._reader() as session:
            after = None
            if marker is not None:
                after = session.execute(sa.select(*order).where(server.uuid == marker)).first()
                if after is None:
                    raise exception.ServerNotFound(server_id=marker)
            query = select_rows(
                server,
                server.launched_at.is_not(None),
                server.launched_at < stop,
                sa.or_(server.deleted_at.is_(None), server.deleted_at > start),
                condition,
                order_by=order,
                after=after,
                limit=limit,
            )
            return list(session.scalars(query))
