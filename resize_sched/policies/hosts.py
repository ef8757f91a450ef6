"""Rules of ``os-hosts`` (up to microversion 2.42). Administrators only by
default, as in Nova."""

from resize_sched.policies import base

HOSTS = "os_compute_api:os-hosts:%s"

LIST = HOSTS % "list"
SHOW = HOSTS % "show"
UPDATE = HOSTS % "update"
REBOOT = HOSTS % "reboot"
SHUTDOWN = HOSTS % "shutdown"
START = HOSTS % "start"

_ONE = "/os-hosts/{host_name}"

RULES = [
    base.rule(LIST, base.ADMIN, "List the hosts of every service, with zones.", "GET /os-hosts"),
    base.rule(SHOW, base.ADMIN, "Show a compute host's sizes and usage.", f"GET {_ONE}"),
    base.rule(UPDATE, base.ADMIN, "Enable or disable a compute host.", f"PUT {_ONE}"),
    base.rule(REBOOT, base.ADMIN, "Reboot a host (not served: 501).", f"GET {_ONE}/reboot"),
    base.rule(SHUTDOWN, base.ADMIN, "Shut a host down (not served: 501).", f"GET {_ONE}/shutdown"),
    base.rule(START, base.ADMIN, "Start a host up (not served: 501).", f"GET {_ONE}/startup"),
]
