"""Rules of a cold migration: ``migrate``.

Names and defaults are Nova's (``os_compute_api:os-migrate-server:*``, as
since Nova 32.0.0): a manager of the server's project, or an administrator,
may ask for a cold migration and let the scheduler choose the host; naming
the host (microversion 2.56) is a rule of its own, an administrator's. A
request is checked against exactly one of the two: ``migrate:host`` when it
names a host, ``migrate`` otherwise.
"""

from resize_sched.policies import base

POLICY_ROOT = "os_compute_api:os-migrate-server:%s"

MIGRATE = POLICY_ROOT % "migrate"
MIGRATE_HOST = POLICY_ROOT % "migrate:host"

RULES = [
    base.rule(
        MIGRATE,
        base.PROJECT_MANAGER_OR_ADMIN,
        "Cold migrate a server to another host the scheduler chooses (no host named).",
        "POST /servers/{server_id}/action (migrate)",
    ),
    base.rule(
        MIGRATE_HOST,
        base.ADMIN,
        "Cold migrate a server to a host the caller names (microversion 2.56 and later).",
        "POST /servers/{server_id}/action (migrate)",
    ),
]


def rule_for(host: str | None) -> str:
    """The one rule a cold migration is checked against.

    :param host: the host the request names, if any.
    :returns: :data:`MIGRATE_HOST` for a named host, :data:`MIGRATE` otherwise.
    """
    return MIGRATE_HOST if host else MIGRATE
