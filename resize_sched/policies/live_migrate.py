"""Rules of a live migration: ``os-migrateLive``.

Names and defaults are Nova's (``os_compute_api:os-migrate-server:*``, as
since Nova 32.0.0): a manager of the server's project, or an administrator,
may live-migrate it to a host the scheduler chooses (``migrate_live``);
naming the host (``migrate_live:host``) is an administrator's. A request is
checked against exactly one of the two.

``migrate_live:host`` is new in Nova 32.0.0 and, as there, names
``migrate_live`` as the rule it grew out of: a ``policy.yaml`` that
overrides ``migrate_live`` but not ``migrate_live:host`` keeps deciding
live migrations to a named host with its own check string.
"""

from oslo_policy import policy

from resize_sched.policies import base

POLICY_ROOT = "os_compute_api:os-migrate-server:%s"

MIGRATE_LIVE = POLICY_ROOT % "migrate_live"
MIGRATE_LIVE_HOST = POLICY_ROOT % "migrate_live:host"

_SPLIT = (
    "migrate_live used to decide every live migration; it now decides those "
    "without a named host, and migrate_live:host those naming one. A policy file "
    "that overrides migrate_live should also override migrate_live:host."
)

#: What ``migrate_live:host`` was before it had a name of its own.
_BEFORE_THE_SPLIT = policy.DeprecatedRule(
    MIGRATE_LIVE, base.ADMIN, deprecated_reason=_SPLIT, deprecated_since="32.0.0"
)

_OPERATION = "POST /servers/{server_id}/action (os-migrateLive)"

RULES = [
    base.rule(
        MIGRATE_LIVE,
        base.PROJECT_MANAGER_OR_ADMIN,
        "Live-migrate a server to another host the scheduler chooses (host null).",
        _OPERATION,
    ),
    base.rule(
        MIGRATE_LIVE_HOST,
        base.ADMIN,
        "Live-migrate a server to a host the caller names.",
        _OPERATION,
        deprecated_rule=_BEFORE_THE_SPLIT,
    ),
]


def rule_for(host: str | None) -> str:
    """The one rule a live migration is checked against.

    :param host: the host the request names, if any.
    :returns: :data:`MIGRATE_LIVE_HOST` for a named host, :data:`MIGRATE_LIVE` otherwise.
    """
    return MIGRATE_LIVE_HOST if host else MIGRATE_LIVE
