"""Data API for server groups (a mixin of ``Database``).

A group has one policy (``affinity``, ``anti-affinity`` and their soft
forms) and, for ``anti-affinity``, the rule ``max_server_per_host``. A
server is in one group at most; it joins when it is created (the ``group``
scheduler hint, at the API, as Nova) and leaves when it is deleted. A
deleted group takes its member rows with it (``ON DELETE CASCADE``).

Two reads serve the scheduler: :meth:`GroupApi.group_policy_of` (the group
of a server being placed, with its members' hosts, in one query) and
:meth:`GroupApi.group_check_host_in` (the late check, run in the
transaction that records a host, under a lock on the group's row).
"""

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from oslo_log import log as logging
from sqlalchemy.orm import Session

from resize_sched import exception
from resize_sched.db import models
from resize_sched.db.project_scope import ProjectScope, project_condition
from resize_sched.db.retry import (
    call_uuid,
    commit_may_have_landed,
    earlier_run_row,
    retry_on_deadlock,
)
from resize_sched.db.session import SessionSource, stamp_after, writes
from resize_sched.db.values import text

LOG = logging.getLogger(__name__)

AFFINITY = "affinity"
ANTI_AFFINITY = "anti-affinity"
SOFT_AFFINITY = "soft-affinity"
SOFT_ANTI_AFFINITY = "soft-anti-affinity"

#: Every policy a group may have (Nova's; the soft ones from microversion 2.15).
POLICIES = (AFFINITY, ANTI_AFFINITY, SOFT_AFFINITY, SOFT_ANTI_AFFINITY)

#: The policies the late check enforces; the soft ones only weigh.
STRICT_POLICIES = (AFFINITY, ANTI_AFFINITY)

_MEMBER = models.ServerGroupMember

#: The rule of ``anti-affinity``: how many members one host may hold (default 1).
MAX_SERVER_PER_HOST = "max_server_per_host"


def _checked_rules(policy: str, rules: Mapping[str, Any] | None) -> dict[str, int]:
    found = dict(rules or {})
    if found and policy != ANTI_AFFINITY:
        raise exception.Invalid(reason="Only anti-affinity policy supports rules.")
    unknown = sorted(set(found) - {MAX_SERVER_PER_HOST})
    if unknown:
        raise exception.Invalid(reason=f"unknown server group rules: {', '.join(unknown)}")
    if MAX_SERVER_PER_HOST in found:
        value = found[MAX_SERVER_PER_HOST]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise exception.Invalid(
                reason=f"{MAX_SERVER_PER_HOST} must be a positive integer, got {value!r}"
            )
    return found


def violation(
    policy: str, rules: Mapping[str, Any], host: str, hosts: Iterable[str]
) -> str | None:
    """Why placing a member on ``host`` breaks a strict policy, if it does.

    :param policy: the group's policy.
    :param rules: its rules.
    :param host: the host chosen for the member.
    :param hosts: the hosts of the other members, one entry per member (a
        host holding two members is listed twice).
    :returns: the reason in words, or None when the policy holds (always
        None for a soft policy).
    """
    hosts = [h for h in hosts if h]
    if policy == AFFINITY:
        others = sorted(set(hosts) - {host})
        if others:
            return f"affinity: the group's other members are on {', '.join(others)}"
    elif policy == ANTI_AFFINITY:
        limit = int(rules.get(MAX_SERVER_PER_HOST, 1))
        on_host = sum(1 for h in hosts if h == host)
        if on_host >= limit:
            return (
                f"anti-affinity: {host} already holds {on_host} member(s) of the group "
                f"(max_server_per_host {limit})"
            )
    return None


class GroupApi(SessionSource):
    """Server groups and their members."""

    @retry_on_deadlock
    def group_create(
        self,
        *,
        name: str,
        project_id: str,
        user_id: str,
        policy: str,
        rules: Mapping[str, Any] | None = None,
    ) -> models.ServerGroup:
        """Create a server group.

        :raises resize_sched.exception.Invalid: an unknown policy, rules on a
            policy other than ``anti-affinity``, a bad name; nothing written.
        """
        name = text(name, "name")
        if policy not in POLICIES:
            raise exception.Invalid(
                reason=f"unknown server group policy {policy!r}; use one of {', '.join(POLICIES)}"
            )
        # NOTE: the same uuid in every run of this call: a run again after a
        # COMMIT whose answer was lost is refused as a duplicate, then finds it.
        group = models.ServerGroup(
            uuid=call_uuid("server_group"),
            name=name,
            project_id=text(project_id, "project_id"),
            user_id=text(user_id, "user_id"),
            policy=policy,
            rules=_checked_rules(policy, rules),
        )
        columns = {c: getattr(group, c) for c in ("uuid", "name", "project_id", "policy")}
        with self._writer() as session:
            found = earlier_run_row(session, models.ServerGroup, {"uuid": group.uuid}, columns)
            if found is not None:
                return found  # type: ignore[no-any-return]
            session.add(group)
        LOG.info("Created server group %s (%s, %s)", group.uuid, name, policy)
        return group

    def group_get(self, uuid: str, project_id: ProjectScope) -> models.ServerGroup:
        """A group, within ``project_id``.

        :raises resize_sched.exception.ServerGroupNotFound: unknown, or
            another project's.
        """
        scope = project_condition(models.ServerGroup.project_id, project_id, "group_get")
        group = self._first(models.ServerGroup, scope, uuid=uuid)
        if group is None:
            raise exception.ServerGroupNotFound(group_uuid=uuid)
        return group

    def group_list(
        self, project_id: ProjectScope, *, limit: int | None = None, offset: int = 0
    ) -> list[models.ServerGroup]:
        """The groups of ``project_id`` (or every project's), oldest first."""
        scope = project_condition(models.ServerGroup.project_id, project_id, "group_list")
        return self._list(
            models.ServerGroup,
            scope,
            order_by=(models.ServerGroup.id,),
            offset=offset,
            limit=limit,
        )

    def group_count(self, project_id: str, user_id: str | None = None) -> int:
        """How many groups ``project_id`` (and ``user_id`` in it) has: the
        ``server_groups`` quota's usage."""
        query = sa.select(sa.func.count(models.ServerGroup.id)).where(
            models.ServerGroup.project_id == project_id
        )
        if user_id is not None:
            query = query.where(models.ServerGroup.user_id == user_id)
        with self._reader() as session:
            return int(session.scalar(query) or 0)

    @retry_on_deadlock
    def group_delete(self, uuid: str, project_id: ProjectScope) -> None:
        """Delete a group; its members stay, in no group.

        :raises resize_sched.exception.ServerGroupNotFound: unknown, or
            another project's.
        """
        query = sa.delete(models.ServerGroup).where(models.ServerGroup.uuid == uuid)
        scope = project_condition(models.ServerGroup.project_id, project_id, "group_delete")
        if scope is not None:
            query = query.where(scope)
        with self._writer() as session:
            group_id = session.scalar(
                sa.select(models.ServerGroup.id).where(models.ServerGroup.uuid == uuid)
            )
            if group_id is not None:
                # NOTE: SQLite enforces ON DELETE CASCADE only with its
                # foreign keys on; said here for every backend.
                session.execute(
                    sa.delete(models.ServerGroupMember).where(
                        models.ServerGroupMember.group_id == group_id
                    )
                )
            if session.execute(query).rowcount == 0:
                raise exception.ServerGroupNotFound(group_uuid=uuid)
        LOG.info("Deleted server group %s", uuid)

    def group_members(self, group_ids: Iterable[int]) -> dict[int, list[str]]:
        """The live members of each group (deleted servers left out), in the
        order they joined."""
        ids = list(group_ids)
        found: dict[int, list[str]] = {group_id: [] for group_id in ids}
        if not ids:
            return found
        member, server = models.ServerGroupMember, models.Server
        query = (
            sa.select(member.group_id, member.server_uuid)
            .join(server, server.uuid == member.server_uuid)
            .where(member.group_id.in_(ids), server.deleted_at.is_(None))
            .order_by(member.id)
        )
        with self._reader() as session:
            for group_id, server_uuid in session.execute(query):
                found[group_id].append(server_uuid)
        return found

    @retry_on_deadlock
    def group_add_member(self, group_uuid: str, server_uuid: str) -> None:
        """Make ``server_uuid`` a member of the group.

        :raises resize_sched.exception.ServerGroupNotFound: the group is gone.
        :raises resize_sched.exception.Invalid: the server is in a group already.
        """
        with self._writer() as session:
            group_id = session.scalar(
                sa.select(models.ServerGroup.id).where(models.ServerGroup.uuid == group_uuid)
            )
            if group_id is None:
                raise exception.ServerGroupNotFound(group_uuid=group_uuid)
            taken = session.scalar(
                sa.select(models.ServerGroupMember.group_id).where(
                    models.ServerGroupMember.server_uuid == server_uuid
                )
            )
            if taken is not None:
                if commit_may_have_landed() and taken == group_id:
                    LOG.info("Server %s was put in group %s earlier", server_uuid, group_uuid)
                    return
                raise exception.Invalid(reason=f"server {server_uuid} is in a group already")
            session.add(models.ServerGroupMember(group_id=group_id, server_uuid=server_uuid))
        LOG.info("Server %s joined server group %s", server_uuid, group_uuid)

    @writes
    def group_remove_member(self, session: Session, server_uuid: str) -> bool:
        """Take ``server_uuid`` out of its group (a deleted server leaves it).

        :returns: whether it was in one.
        """
        removed = session.execute(
            sa.delete(models.ServerGroupMember).where(
                models.ServerGroupMember.server_uuid == server_uuid
            )
        ).rowcount
        return bool(removed)

    def group_of_server(self, server_uuid: str) -> models.ServerGroup | None:
        """The group ``server_uuid`` is a member of, or None."""
        query = (
            sa.select(models.ServerGroup)
            .join(
                models.ServerGroupMember,
                models.ServerGroupMember.group_id == models.ServerGroup.id,
            )
            .where(_MEMBER.server_uuid == server_uuid)
        )
        with self._reader() as session:
            return session.scalars(query).first()

    def group_policy_of(
        self, group_uuid: str, server_uuid: str, *, own_host: str | None = None
    ) -> tuple[models.ServerGroup, list[str], list[str]] | None:
        """A group as the scheduler sees it, in one query: the group, its live
        members, and the hosts of the members other than ``server_uuid``
        (one entry per member; a member in a resize or migration also counts
        on the destination it holds room on), plus ``own_host`` (a moved
        server's own host, as Nova's ``instance_group.hosts`` has it).

        :returns: None when no such group exists.
        """
        with self._reader() as session:
            rows = session.execute(_members_query(group_uuid)).all()
        if not rows:
            return None
        group = rows[0][0]
        members: list[str] = []
        hosts: list[str] = []
        for _, member, host, dest in rows:
            if member is None:
                continue
            if member not in members:
                members.append(member)
            if member == server_uuid:
                continue
            for where in {host, dest} - {None}:
                hosts.append(where)
        if own_host is not None:
            hosts.append(own_host)
        return group, members, hosts

    def group_check_host_in(self, session: Session, server_uuid: str, host: str) -> None:
        """The late check: may ``server_uuid`` go to ``host`` under its group's
        strict policy? Run in the transaction that records the host, after
        locking the group's row, so that two members racing onto one host
        are decided one after the other.

        :raises resize_sched.exception.GroupPolicyViolation: the policy forbids it.
        """
        group = session.execute(
            sa.select(models.ServerGroup)
            .join(
                models.ServerGroupMember,
                models.ServerGroupMember.group_id == models.ServerGroup.id,
            )
            .where(_MEMBER.server_uuid == server_uuid)
            .with_for_update()
        ).scalar_one_or_none()
        if group is None or group.policy not in STRICT_POLICIES:
            return
        # NOTE: the row lock decides two members racing onto one host one
        # after the other on one server; on Galera it holds on its own node
        # only, and each of the two transactions writes only its own
        # server's (or migration's) row: both would certify and both land.
        # So the group's row is written too (its updated_at moved on): two
        # late checks of one group certify against each other, and the
        # loser runs again whole and sees the winner's host.
        session.execute(
            sa.update(models.ServerGroup)
            .where(models.ServerGroup.id == group.id)
            .values(updated_at=stamp_after(group.updated_at))
            .execution_options(synchronize_session=False)
        )
        hosts = [
            where
            for _, member, where_host, dest in session.execute(_members_query(group.uuid))
            if member is not None and member != server_uuid
            for where in {where_host, dest} - {None}
        ]
        reason = violation(group.policy, group.rules or {}, host, hosts)
        if reason is not None:
            raise exception.GroupPolicyViolation(
                server_id=server_uuid, group_uuid=group.uuid, host=host, reason=reason
            )


def _members_query(group_uuid: str) -> sa.Select[Any]:
    """The group, each live member, its host and the destination of its move
    in flight (if any): one row per member (one with NULLs for a group
    without members)."""
    group, member, server, migration = (
        models.ServerGroup,
        models.ServerGroupMember,
        models.Server,
        models.Migration,
    )
    live = sa.select(server.uuid, server.host).where(server.deleted_at.is_(None)).subquery()
    moving = (
        sa.select(migration.server_uuid, migration.dest_host)
        .where(migration.status.in_(models.IN_FLIGHT_STATUSES))
        .subquery()
    )
    return (
        sa.select(group, live.c.uuid, live.c.host, moving.c.dest_host)
        .outerjoin(member, member.group_id == group.id)
        .outerjoin(live, live.c.uuid == member.server_uuid)
        .outerjoin(moving, moving.c.server_uuid == live.c.uuid)
        .where(group.uuid == group_uuid)
        .order_by(member.id)
    )
