"""Rules of an evacuation: ``evacuate``.

Nova's name and default (``os_compute_api:os-evacuate``): only an
administrator rebuilds a server elsewhere when its host is down.
"""

from resize_sched.policies import base

EVACUATE = "os_compute_api:os-evacuate"

RULES = [
    base.rule(
        EVACUATE,
        base.ADMIN,
        "Evacuate a server whose host is down: rebuild it on another host.",
        "POST /servers/{server_id}/action (evacuate)",
    ),
]
