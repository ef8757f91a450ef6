"""``[quota] driver = unified_limits``: limits from Keystone, through oslo.limit.

Keystone holds the limits, registered against our endpoint (``[oslo_limit]
endpoint_id``, or the service type/name and region there) under Nova's
resource names (:data:`KEYSTONE_NAMES`); usage is counted from our database
exactly as the ``db`` driver counts it (:func:`resize_sched.quota.usage`)
and handed to oslo.limit's :class:`~oslo_limit.limit.Enforcer`, which does
the comparison (-1 is unlimited; a resource Keystone has no limit for is
limited to 0, so nothing of it is allowed).

As in Nova, ``servers``, ``class:VCPU`` and ``class:MEMORY_MB`` take a
project's own limit over the registered default; the others (metadata
items, key pairs, server groups and their members, injected files) take the
registered limit only. There are no per-user limits.

oslo.limit reads its options from the process-wide ``cfg.CONF``; resize_sched
keeps its options on the ``ConfigOpts`` each service owns, so
:func:`_configure` copies our ``[oslo_limit]`` there before an enforcer is
made. oslo.limit and the OpenStack SDK are imported only when this driver
is in use.
"""

import threading
import weakref
from collections.abc import Callable, Collection
from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched import exception
from resize_sched.conf import quota as quota_conf

LOG = logging.getLogger(__name__)

#: Our resource name -> the name of its limit in Keystone (Nova's).
KEYSTONE_NAMES = {
    "instances": "servers",
    "cores": "class:VCPU",
    "ram": "class:MEMORY_MB",
    "metadata_items": "server_metadata_items",
    "key_pairs": "server_key_pairs",
    "server_groups": "server_groups",
    "server_group_members": "server_group_members",
    "injected_files": "server_injected_files",
    "injected_file_content_bytes": "server_injected_file_content_bytes",
    "injected_file_path_bytes": "server_injected_file_path_bytes",
}

#: Keystone's name -> ours.
OUR_NAMES = {keystone: ours for ours, keystone in KEYSTONE_NAMES.items()}

#: The resources whose project limits apply (Nova's Placement-counted ones);
#: the others are limited by their registered limit alone, as in Nova.
PROJECT_LIMITED = ("instances", "cores", "ram")

#: Usage callback oslo.limit calls: (project_id, keystone names) -> usage.
UsageCallback = Callable[[str | None, list[str]], dict[str, int]]

_LOCK = threading.Lock()
_APPLIED: tuple[tuple[str, str], ...] | None = None


#: id(ConfigOpts) -> (that ConfigOpts, the auth_type whose options it has).
_REGISTERED: dict[int, tuple["weakref.ref[cfg.ConfigOpts]", str | None]] = {}


def _register(conf: cfg.ConfigOpts) -> None:
    # NOTE: loading the auth plugin's options takes milliseconds: once per
    # ConfigOpts and auth_type, not at every check.
    group = quota_conf.OSLO_LIMIT_GROUP
    done = _REGISTERED.get(id(conf))
    if done is not None and done[0]() is conf and done[1] == conf[group].auth_type:
        return
    quota_conf.register_oslo_limit_opts(conf)
    _REGISTERED[id(conf)] = (weakref.ref(conf), conf[group].auth_type)


def _configure(conf: cfg.ConfigOpts) -> None:
    """Give oslo.limit (which reads the global ``cfg.CONF``) our ``[oslo_limit]``."""
    global _APPLIED
    from oslo_limit import limit

    group = quota_conf.OSLO_LIMIT_GROUP
    with _LOCK:
        _register(conf)
        values = {name: conf[group][name] for name in conf[group]}
        fingerprint = tuple(sorted((name, repr(value)) for name, value in values.items()))
        if fingerprint == _APPLIED:
            return
        # NOTE: oslo.limit keeps the Keystone connection it makes first for
        # the life of the process; [oslo_limit] is not mutable, so a change
        # of credentials or Keystone takes a restart, as in Nova.
        target = limit.CONF
        target.set_override("auth_type", values.get("auth_type"), group=group)
        _register(target)
        for name in target[group]:
            if name in values:
                target.set_override(name, values[name], group=group)
            else:
                # NOTE: another auth plugin's option, left from an earlier setting.
                target.clear_override(name, group=group)
        _APPLIED = fingerprint
    service = values.get("endpoint_service_type") or values.get("endpoint_service_name")
    LOG.info(
        "Unified limits read from Keystone for endpoint %s",
        values.get("endpoint_id") or f"of service {service}",
    )


def _unavailable() -> tuple[type[BaseException], ...]:
    from keystoneauth1 import exceptions as ksa_exceptions
    from openstack import exceptions as sdk_exceptions
    from oslo_limit import exception as limit_exceptions

    return (
        limit_exceptions.SessionInitError,
        ksa_exceptions.ClientException,
        sdk_exceptions.SDKException,
    )


def make_enforcer(conf: cfg.ConfigOpts, usage: UsageCallback) -> Any:
    """An oslo.limit enforcer on our endpoint's limits, ``usage`` counting.

    :raises LimitsUnavailable: Keystone could not be reached, refused our
        credentials, or has no such endpoint.
    """
    _configure(conf)
    from oslo_limit import limit

    try:
        return limit.Enforcer(usage)
    except (*_unavailable(), ValueError) as exc:
        # NOTE: oslo.limit raises ValueError for an endpoint it cannot find.
        raise _failed(exc) from exc


def _failed(exc: BaseException) -> exception.LimitsUnavailable:
    LOG.error("Keystone's unified limits could not be read through oslo.limit: %s", exc)
    return exception.LimitsUnavailable(reason=str(exc))


def _no_usage(project_id: str | None, names: list[str]) -> dict[str, int]:
    return dict.fromkeys(names, 0)


def _read(conf: cfg.ConfigOpts, project_id: str | None) -> dict[str, int]:
    enforcer = make_enforcer(conf, _no_usage)
    local = [KEYSTONE_NAMES[r] for r in KEYSTONE_NAMES if r not in PROJECT_LIMITED]
    placement = [KEYSTONE_NAMES[r] for r in PROJECT_LIMITED]
    try:
        found = list(enforcer.get_registered_limits(local))
        if project_id is None:
            found += enforcer.get_registered_limits(placement)
        else:
            found += enforcer.get_project_limits(project_id, placement)
    except _unavailable() as exc:
        raise _failed(exc) from exc
    return {OUR_NAMES[name]: int(value) for name, value in found}


def missing_registered(conf: cfg.ConfigOpts) -> list[str]:
    """The Keystone names of :data:`KEYSTONE_NAMES` without a registered limit
    on our endpoint (each limited to 0: nothing of it is allowed).

    :raises LimitsUnavailable: Keystone did not answer.
    """
    enforcer = make_enforcer(conf, _no_usage)
    try:
        registered = {name for name, _limit in enforcer.get_registered_limits(None)}
    except _unavailable() as exc:
        raise _failed(exc) from exc
    return [name for name in KEYSTONE_NAMES.values() if name not in registered]


def defaults(conf: cfg.ConfigOpts) -> dict[str, int]:
    """Keystone's registered limits, by our names (0 where none is registered)."""
    return _read(conf, None)


def limits(conf: cfg.ConfigOpts, project_id: str) -> dict[str, int]:
    """The limits of ``project_id``: its own in Keystone for :data:`PROJECT_LIMITED`
    (the registered one where it has none), the registered ones for the rest."""
    return _read(conf, project_id)


def enforce(
    conf: cfg.ConfigOpts,
    project_id: str,
    wanted: dict[str, int],
    used: dict[str, int],
    order: Collection[str],
) -> None:
    """Have oslo.limit refuse adding ``wanted`` (all positive) to ``used``.

    :param order: our resource names, in the order the first refused one is named.
    :raises OverQuota: a limit would be passed (the first in ``order``).
    :raises LimitsUnavailable: Keystone did not answer.
    """
    from oslo_limit import exception as limit_exceptions

    known = {r: d for r, d in wanted.items() if r in KEYSTONE_NAMES}
    if not known:
        return

    def usage(_project_id: str | None, names: list[str]) -> dict[str, int]:
        return {name: int(used.get(OUR_NAMES[name], 0)) for name in names}

    enforcer = make_enforcer(conf, usage)
    checks = (
        (project_id, {KEYSTONE_NAMES[r]: d for r, d in known.items() if r in PROJECT_LIMITED}),
        (None, {KEYSTONE_NAMES[r]: d for r, d in known.items() if r not in PROJECT_LIMITED}),
    )
    over = []
    for scope, deltas in checks:
        if not deltas:
            continue
        try:
            enforcer.enforce(scope, deltas)
        except limit_exceptions.ProjectOverLimit as exc:
            over.extend(exc.over_limit_info_list)
        except _unavailable() as exc:
            raise _failed(exc) from exc
    if not over:
        return
    rank = {name: index for index, name in enumerate(order)}
    first = min(
        over, key=lambda i: (rank.get(OUR_NAMES[i.resource_name], len(rank)), i.resource_name)
    )
    raise exception.OverQuota(
        resource=OUR_NAMES[first.resource_name],
        requested=first.delta,
        used=first.current_usage,
        limit=first.limit,
    )
