"""Rules of shelving: ``shelve``, ``shelveOffload`` and ``unshelve``.

Names and defaults are Nova's (``os_compute_api:os-shelve:*``): the owner
(or an administrator) shelves and unshelves a server; only an administrator
offloads one at will (the ``[DEFAULT] shelved_offload_time`` does it on its own).
"""

from resize_sched.policies import base

POLICY_ROOT = "os_compute_api:os-shelve:%s"

SHELVE = POLICY_ROOT % "shelve"
SHELVE_OFFLOAD = POLICY_ROOT % "shelve_offload"
UNSHELVE = POLICY_ROOT % "unshelve"

RULES = [
    base.rule(
        SHELVE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Shelve a server: power it off and keep it, its host's room held until offloaded.",
        "POST /servers/{server_id}/action (shelve)",
    ),
    base.rule(
        SHELVE_OFFLOAD,
        base.ADMIN,
        "Offload a shelved server: remove it from its host and give the room back.",
        "POST /servers/{server_id}/action (shelveOffload)",
    ),
    base.rule(
        UNSHELVE,
        base.PROJECT_MEMBER_OR_ADMIN,
        "Unshelve a server: start it on its host, or on one the scheduler chooses once "
        "offloaded (with an availability zone from microversion 2.77).",
        "POST /servers/{server_id}/action (unshelve)",
    ),
]
