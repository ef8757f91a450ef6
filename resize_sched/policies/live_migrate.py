"""Rules of a live migration: ``os-migrateLive``.

Nova's name and default (``os_compute_api:os-migrate-server:migrate_live``):
only an administrator moves a running server, since choosing or forcing a
host is an operator's decision.
"""

from resize_sched.policies import base

MIGRATE_LIVE = "os_compute_api:os-migrate-server:migrate_live"

RULES = [
    base.rule(
        MIGRATE_LIVE,
        base.ADMIN,
        "Live-migrate a server to another host (named, or chosen by the scheduler).",
        "POST /servers/{server_id}/action (os-migrateLive)",
    ),
]
