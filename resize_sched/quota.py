"""Quota limits and their check.

A limit on a resource comes, first found wins, from the project's user row
(``quotas`` with ``user_id``), the project's row, the ``default`` quota
class, then the ``[quota]`` option of the same name; -1 is unlimited. What
counts as used is the caller's to say (it counts from the database in the
same place it is about to add to it): :func:`enforce` only compares.
"""

from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

from resize_sched import exception
from resize_sched.db import models

#: The quota class every project takes its defaults from.
DEFAULT_CLASS = "default"

#: Every resource a limit can be set on, in the order Nova's API lists them.
RESOURCES = (
    "instances",
    "cores",
    "ram",
    "metadata_items",
    "key_pairs",
    "server_groups",
    "server_group_members",
)

UNLIMITED = -1


def limits(
    db: Any, conf: cfg.ConfigOpts, project_id: str, user_id: str | None = None
) -> dict[str, int]:
    """Every resource's limit for ``project_id`` (and ``user_id`` within it)."""
    found = {name: getattr(conf.quota, name) for name in RESOURCES}
    with db._reader() as session:
        for row in session.scalars(
            sa.select(models.QuotaClass).where(models.QuotaClass.class_name == DEFAULT_CLASS)
        ):
            found[row.resource] = row.hard_limit
        rows = list(
            session.scalars(sa.select(models.Quota).where(models.Quota.project_id == project_id))
        )
    for row in rows:
        if row.user_id is None:
            found[row.resource] = row.hard_limit
    for row in rows:
        if user_id is not None and row.user_id == user_id:
            found[row.resource] = row.hard_limit
    return found


def enforce(
    db: Any,
    conf: cfg.ConfigOpts,
    project_id: str,
    user_id: str | None,
    deltas: dict[str, int],
    used: dict[str, int],
) -> None:
    """Refuse adding ``deltas`` to ``used`` where that passes a limit.

    :param deltas: resource -> how much the request adds (0 or less: never
        refused, so a resize down is always allowed).
    :param used: resource -> how much is used now.
    :raises OverQuota: the first resource (in :data:`RESOURCES` order) the
        request would take past its limit.
    """
    if conf.quota.driver == "noop":
        return
    wanted = {rc: d for rc, d in deltas.items() if d > 0}
    if not wanted:
        return
    found = limits(db, conf, project_id, user_id)
    order = {name: index for index, name in enumerate(RESOURCES)}
    for resource in sorted(wanted, key=lambda r: (order.get(r, len(order)), r)):
        limit = found.get(resource, UNLIMITED)
        if limit == UNLIMITED:
            continue
        have = used.get(resource, 0)
        if have + wanted[resource] > limit:
            raise exception.OverQuota(
                resource=resource, requested=wanted[resource], used=have, limit=limit
            )
