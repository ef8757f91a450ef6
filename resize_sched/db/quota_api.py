"""Data API for quotas, key pairs and flavor access (a mixin of ``Database``).

Quota limits (``quotas``: a project's or a user's; ``quota_classes``: the
``default`` class's), what a project uses now (counted from ``servers``,
``key_pairs`` and ``server_groups``, never kept as a separate counter that
could drift), key pairs by user and name, and the projects a private flavor
is shared with (``flavor_projects``).
"""

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.cas import match
from resize_sched.db.retry import commit_may_have_landed, earlier_run_row, retry_on_deadlock
from resize_sched.db.session import INTEGRITY_ERRORS, SessionSource, writes

LOG = logging.getLogger(__name__)


def _live_servers(project_id: str, user_id: str | None) -> Any:
    query = sa.select(models.Server.flavor).where(
        models.Server.project_id == project_id,
        models.Server.deleted_at.is_(None),
        models.Server.status != models.STATUS_DELETED,
    )
    if user_id is not None:
        query = query.where(models.Server.user_id == user_id)
    return query


def _set_limits(session: Session, model: Any, limits: Mapping[str, int], **owner: Any) -> None:
    """Within ``session``: set ``limits`` (resource -> hard limit) on the rows
    of ``model`` (``Quota``, ``QuotaClass``) whose columns are ``owner``:
    change the ones stored, add the others. A None owner column is NULL
    (a project's own quota, no user)."""
    rows = session.scalars(
        sa.select(model).where(*(match(getattr(model, k), v) for k, v in owner.items()))
    )
    found = {row.resource: row for row in rows}
    for resource, limit in limits.items():
        if resource in found:
            found[resource].hard_limit = limit
        else:
            session.add(model(**owner, resource=resource, hard_limit=limit))


class QuotaApi(SessionSource):
    """Quota limits and usage, key pairs, flavor access."""

    # -- limits ------------------------------------------------------------------------

    def quota_rows(self, project_id: str) -> list[models.Quota]:
        """The project's own limits and its users' (``user_id`` set)."""
        return self._list(models.Quota, project_id=project_id)

    def quota_class_get(self, class_name: str) -> dict[str, int]:
        """A quota class's limits: resource -> hard limit (only those stored)."""
        rows = self._list(models.QuotaClass, class_name=class_name)
        return {row.resource: row.hard_limit for row in rows}

    @writes
    def quota_set_limits(
        self,
        session: Session,
        project_id: str,
        limits: Mapping[str, int],
        user_id: str | None = None,
    ) -> None:
        """Set (insert or replace) a project's or a user's limits, all in one transaction."""
        _set_limits(session, models.Quota, limits, project_id=project_id, user_id=user_id)

    @writes
    def quota_class_set_limits(
        self, session: Session, class_name: str, limits: Mapping[str, int]
    ) -> None:
        """Set (insert or replace) a quota class's limits in one transaction."""
        _set_limits(session, models.QuotaClass, limits, class_name=class_name)

    def quota_destroy(self, project_id: str, user_id: str | None = None) -> int:
        """Remove a user's limits (``user_id``) or the project's and all its users'.

        :returns: how many rows went.
        """
        query = sa.delete(models.Quota).where(models.Quota.project_id == project_id)
        if user_id is not None:
            query = query.where(models.Quota.user_id == user_id)
        with self._writer() as session:
            return session.execute(query).rowcount or 0

    # -- usage -------------------------------------------------------------------------

    def quota_usage(self, project_id: str, user_id: str | None = None) -> dict[str, int]:
        """What the project (or one of its users) uses now, counted from the database.

        ``instances``, ``cores`` and ``ram`` come from the live servers, each
        counted at the flavor it has now (the new one once a resize reached
        VERIFY_RESIZE, as Nova counts it); ``key_pairs`` are the user's
        (none without ``user_id``: a key pair belongs to a user, not a
        project); ``server_groups`` the project's (or the user's).
        """
        usage = {"instances": 0, "cores": 0, "ram": 0, "key_pairs": 0, "server_groups": 0}
        with self._reader() as session:
            for flavor in session.scalars(_live_servers(project_id, user_id)):
                usage["instances"] += 1
                usage["cores"] += int(flavor.get("vcpus", 0))
                usage["ram"] += int(flavor.get("memory_mb", 0))
            if user_id is not None:
                usage["key_pairs"] = session.scalar(
                    sa.select(sa.func.count())
                    .select_from(models.KeyPair)
                    .where(models.KeyPair.user_id == user_id)
                )
            groups = (
                sa.select(sa.func.count())
                .select_from(models.ServerGroup)
                .where(models.ServerGroup.project_id == project_id)
            )
            if user_id is not None:
                groups = groups.where(models.ServerGroup.user_id == user_id)
            usage["server_groups"] = session.scalar(groups)
        return usage

    def server_discard(self, uuid: str) -> None:
        """Remove a server row that was never handed to anyone (a create the
        quota recheck refused before its request spec was written)."""
        with self._writer() as session:
            session.execute(sa.delete(models.Server).where(models.Server.uuid == uuid))

    # -- key pairs ---------------------------------------------------------------------

    @retry_on_deadlock
    def keypair_create(
        self, user_id: str, name: str, public_key: str, fingerprint: str, type: str = "ssh"
    ) -> models.KeyPair:
        """Record a user's key pair.

        :raises KeyPairExists: the user has one of that name: nothing written.
        """
        key = {"user_id": user_id, "name": name}
        values = {"public_key": public_key, "fingerprint": fingerprint, "type": type}
        row = models.KeyPair(**key, **values)
        try:
            with self._writer() as session:
                found = earlier_run_row(session, models.KeyPair, key, values)
                if found is not None:
                    return found  # type: ignore[no-any-return]
                session.add(row)
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            raise exception.KeyPairExists(name=name) from None
        return row

    def keypair_get(self, user_id: str, name: str) -> models.KeyPair:
        """A user's key pair by name.

        :raises KeyPairNotFound: the user has none of that name.
        """
        row = self._first(models.KeyPair, user_id=user_id, name=name)
        if row is None:
            raise exception.KeyPairNotFound(name=name, user_id=user_id)
        return row

    def keypair_list(self, user_id: str) -> list[models.KeyPair]:
        """A user's key pairs, by name."""
        return self._list(models.KeyPair, user_id=user_id, order_by=(models.KeyPair.name,))

    def keypair_count(self, user_id: str) -> int:
        """How many key pairs a user has."""
        with self._reader() as session:
            return session.scalar(
                sa.select(sa.func.count())
                .select_from(models.KeyPair)
                .where(models.KeyPair.user_id == user_id)
            )

    def keypair_delete(self, user_id: str, name: str) -> None:
        """Remove a user's key pair.

        :raises KeyPairNotFound: the user has none of that name.
        """
        with self._writer() as session:
            gone = session.execute(
                sa.delete(models.KeyPair).where(
                    models.KeyPair.user_id == user_id, models.KeyPair.name == name
                )
            ).rowcount
        if not gone:
            raise exception.KeyPairNotFound(name=name, user_id=user_id)

    # -- flavor access -----------------------------------------------------------------

    def flavor_access_list(self, flavorid: str) -> list[str]:
        """The projects a live flavor is shared with, sorted.

        :raises FlavorNotFound: no such live flavor.
        """
        flavor = self.flavor_get(flavorid)  # type: ignore[attr-defined]
        with self._reader() as session:
            return sorted(
                session.scalars(
                    sa.select(models.FlavorProject.project_id).where(
                        models.FlavorProject.flavor_id == flavor.id
                    )
                )
            )

    @retry_on_deadlock
    def flavor_access_add(self, flavorid: str, project_id: str) -> list[str]:
        """Share a live flavor with a project.

        :returns: the projects it is shared with now.
        :raises FlavorNotFound: no such live flavor.
        :raises FlavorAccessExists: already shared with it: nothing written.
        """
        flavor = self.flavor_get(flavorid)  # type: ignore[attr-defined]
        key = {"flavor_id": flavor.id, "project_id": project_id}
        try:
            with self._writer() as session:
                if earlier_run_row(session, models.FlavorProject, key, key) is None:
                    session.add(models.FlavorProject(**key))
        except INTEGRITY_ERRORS:
            if commit_may_have_landed():
                raise  # run again: the row is this call's own (see db.retry)
            raise exception.FlavorAccessExists(flavor_id=flavorid, project_id=project_id) from None
        return self.flavor_access_list(flavorid)

    def flavor_access_remove(self, flavorid: str, project_id: str) -> list[str]:
        """Stop sharing a live flavor with a project.

        :returns: the projects it is shared with now.
        :raises FlavorNotFound: no such live flavor.
        :raises FlavorAccessNotFound: it was not shared with it.
        """
        flavor = self.flavor_get(flavorid)  # type: ignore[attr-defined]
        with self._writer() as session:
            gone = session.execute(
                sa.delete(models.FlavorProject).where(
                    models.FlavorProject.flavor_id == flavor.id,
                    models.FlavorProject.project_id == project_id,
                )
            ).rowcount
        if not gone:
            raise exception.FlavorAccessNotFound(flavor_id=flavorid, project_id=project_id)
        return self.flavor_access_list(flavorid)

    def flavor_shared_with(self, project_id: str) -> set[int]:
        """The row ids of the flavors shared with a project."""
        with self._reader() as session:
            return set(
                session.scalars(
                    sa.select(models.FlavorProject.flavor_id).where(
                        models.FlavorProject.project_id == project_id
                    )
                )
            )
