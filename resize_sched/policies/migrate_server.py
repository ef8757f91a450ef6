"""Rules of the moves an administrator asks for: ``migrate`` (cold migration).

Names and defaults are Nova's (``os_compute_api:os-migrate-server:*``): only
an administrator moves a server between hosts, and naming the host
(microversion 2.56) is a rule of its own.
"""

from resize_sched.policies import base

POLICY_ROOT = "os_compute_api:os-migrate-server:%s"

MIGRATE = POLICY_ROOT % "migrate"
MIGRATE_HOST = POLICY_ROOT % "migrate:host"

RULES = [
    base.rule(
        MIGRATE,
        base.ADMIN,
        "Cold migrate a server to another host the scheduler chooses.",
        "POST /servers/{server_id}/action (migrate)",
    ),
    base.rule(
        MIGRATE_HOST,
        base.ADMIN,
        "Cold migrate a server to a host the caller names (microversion 2.56 and later).",
        "POST /servers/{server_id}/action (migrate)",
    ),
]
