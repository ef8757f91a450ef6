"""Quota limits and their check, whichever ``[quota] driver`` is set.

Every caller goes through these functions and never asks which driver is
set. With ``db`` (and ``noop``, which enforces nothing) a limit on a
resource comes, first found wins, from the project's user row (``quotas``
with ``user_id``), the project's row, the ``default`` quota class, then the
``[quota]`` option of the same name. With ``unified_limits`` it comes from
Keystone (:mod:`resize_sched.quota.unified_limits`). -1 is unlimited. What counts
as used is the caller's to say (it counts from the database in the same
place it is about to add to it): :func:`enforce` only compares.
"""

from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

from resize_sched import exception
from resize_sched.db import models
from resize_sched.quota import unified_limits

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

#: Limits on what a server is given at create (Nova's personality files):
#: shown and settable below microversion 2.57, never counted (no files here).
INJECTED = ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes")

#: nova-network's resources: shown (unlimited unless set) and settable below
#: microversion 2.36, never counted.
NETWORK = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")

#: Every resource an os-quota-sets body may name at some microversion.
ALL_RESOURCES = RESOURCES + INJECTED + NETWORK

#: Resources whose usage is counted per user (a key pair is a user's).
PER_USER = ("key_pairs",)


def _configured(conf: cfg.ConfigOpts) -> dict[str, int]:
    found = {name: getattr(conf.quota, name) for name in RESOURCES}
    found["injected_files"] = conf.quota.injected_files
    found["injected_file_content_bytes"] = conf.quota.injected_file_content_bytes
    found["injected_file_path_bytes"] = conf.quota.injected_file_path_length
    found.update(dict.fromkeys(NETWORK, UNLIMITED))
    return found


def _unified(conf: cfg.ConfigOpts) -> bool:
    return conf.quota.driver == "unified_limits"


def _from_keystone(found: dict[str, int]) -> dict[str, int]:
    # NOTE: as Nova's: what Keystone has no name for (nova-network's) is unlimited.
    return {**dict.fromkeys(ALL_RESOURCES, UNLIMITED), **found}


def settable(conf: cfg.ConfigOpts) -> bool:
    """Whether os-quota-sets and os-quota-class-sets updates are stored: not
    with ``unified_limits``, whose limits are Keystone's (an update is then
    accepted and changes nothing, as in Nova)."""
    return not _unified(conf)


def defaults(db: Any, conf: cfg.ConfigOpts) -> dict[str, int]:
    """Every resource's default: the ``default`` quota class over ``[quota]``
    (``unified_limits``: Keystone's registered limits)."""
    if _unified(conf):
        return _from_keystone(unified_limits.defaults(conf))
    found = _configured(conf)
    found.update(db.quota_class_get(DEFAULT_CLASS))
    return found


def class_limits(db: Any, conf: cfg.ConfigOpts, class_name: str) -> dict[str, int]:
    """A quota class's limits: the defaults, then what the class sets (as Nova;
    ``unified_limits``: every class shows Keystone's registered limits)."""
    if _unified(conf):
        return defaults(db, conf)
    return {**defaults(db, conf), **db.quota_class_get(class_name)}


def limits(
    db: Any, conf: cfg.ConfigOpts, project_id: str, user_id: str | None = None
) -> dict[str, int]:
    """Every resource's limit for ``project_id`` (and ``user_id`` within it;
    ``unified_limits`` has no per-user limits).

    :raises LimitsUnavailable: ``unified_limits``, and Keystone did not answer.
    """
    if _unified(conf):
        return _from_keystone(unified_limits.limits(conf, project_id))
    found = _configured(conf)
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
    :raises LimitsUnavailable: ``unified_limits``, and Keystone did not answer.
    """
    if conf.quota.driver == "noop":
        return
    wanted = {rc: d for rc, d in deltas.items() if d > 0}
    if not wanted:
        return
    if _unified(conf):
        # NOTE: oslo.limit compares, against the project's limits in Keystone.
        unified_limits.enforce(conf, project_id, wanted, used, RESOURCES)
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


def usage(db: Any, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """What ``project_id`` (or ``user_id`` in it) uses of each resource, counted
    from the database: :meth:`resize_sched.db.quota_api.QuotaApi.quota_usage`;
    every resource it does not count is 0."""
    found = dict.fromkeys(ALL_RESOURCES, 0)
    found.update(db.quota_usage(project_id, user_id))
    return found


def flavor_deltas(flavor: Any) -> dict[str, int]:
    """What one server of ``flavor`` (a Flavor or a snapshot) counts against quota."""
    if isinstance(flavor, dict):
        return {"instances": 1, "cores": int(flavor["vcpus"]), "ram": int(flavor["memory_mb"])}
    return {"instances": 1, "cores": flavor.vcpus, "ram": flavor.memory_mb}


def check_server(
    db: Any,
    conf: cfg.ConfigOpts,
    project_id: str,
    user_id: str | None,
    deltas: dict[str, int],
    *,
    already_added: bool = False,
) -> None:
    """Refuse a server (or a resize) whose ``deltas`` would pass the
    project's or the user's limits, usage counted from the database now.

    :param already_added: the deltas are already in the database (the
        recheck after a create, as Nova's): only usage past the limit is refused.
    :raises OverQuota: a project or user limit would be passed.
    """
    per_user = user_id is not None and not _unified(conf)
    for scope_user in (None, user_id) if per_user else (None,):
        used = usage(db, project_id, scope_user)
        if already_added:
            used = {rc: used.get(rc, 0) - deltas.get(rc, 0) for rc in used}
        enforce(db, conf, project_id, scope_user, deltas, used)


def servers_that_fit(
    db: Any,
    conf: cfg.ConfigOpts,
    project_id: str,
    user_id: str | None,
    deltas: dict[str, int],
    min_count: int,
    max_count: int,
) -> int:
    """How many servers of one ``deltas`` (:func:`flavor_deltas`) a multiple
    create may make: ``max_count`` if the quota allows, else the most it
    allows, not below ``min_count`` (as Nova's).

    Each count is asked of :func:`check_server`, so every driver (the
    database's, ``unified_limits``, ``noop``) answers the same way; the
    counts that fit are contiguous from 0, so a bisection asks few.

    :raises OverQuota: not even ``min_count`` servers fit (from the
        ``min_count`` check).
    :raises LimitsUnavailable: ``unified_limits``, and Keystone did not answer.
    """

    def scaled(count: int) -> dict[str, int]:
        return {rc: amount * count for rc, amount in deltas.items()}

    def fits(count: int) -> bool:
        try:
            check_server(db, conf, project_id, user_id, scaled(count))
        except exception.OverQuota:
            return False
        return True

    if fits(max_count):
        return max_count
    check_server(db, conf, project_id, user_id, scaled(min_count))
    fitting, too_many = min_count, max_count
    while too_many - fitting > 1:
        middle = (fitting + too_many) // 2
        if fits(middle):
            fitting = middle
        else:
            too_many = middle
    return fitting
