"""Options of the ``[wsgi]`` group: how ``resize-sched-api`` holds its connections.

They matter only to the standalone server (:mod:`resize_sched.api.server`,
waitress), which ``resize-sched-api`` and ``resize-sched-all-in-one`` run.
Behind uWSGI or Apache mod_wsgi (:mod:`resize_sched.api.wsgi`) that server's
own settings decide instead.
"""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "wsgi",
    title="Standalone API server options",
    help="Connections of the HTTP server (waitress) of resize-sched-api and "
    "resize-sched-all-in-one: how many it "
    "holds, and how long a slow or idle client may keep one. Not read when the API "
    "runs under uWSGI or mod_wsgi.",
)

OPTS = [
    cfg.IntOpt(
        "connection_limit",
        default=2000,
        min=10,
        help="The most client connections held open at once; past it, new "
        "connections wait in the listen queue until one closes. Idle keep-alive "
        "connections and clients still sending their request count too, so this must "
        "stay well above the clients you expect at once (a slow client takes a "
        "connection, not a worker thread). At start the process raises its open-file "
        "limit (RLIMIT_NOFILE) to fit; if the hard limit is lower, the limit is cut "
        "to fit it and a warning says so.",
    ),
    cfg.IntOpt(
        "client_socket_timeout",
        default=60,
        min=1,
        help="Seconds a connection may stay silent (nothing received or sent) before it "
        "is closed: idle keep-alive connections, and clients that stop sending in the "
        "middle of a request. Lower it when many clients leave connections open; "
        "raise it when clients legitimately pause longer (Nova's option of the same "
        "name, which its own server applies the same way).",
    ),
    cfg.IntOpt(
        "request_read_timeout",
        default=30,
        min=1,
        help="Seconds a client may take to send a whole request (headers and body) "
        "once it has begun, however steadily it trickles bytes in; past it the "
        "connection is closed without an answer. Raise it only for clients on very "
        "slow links (the largest body is [oslo_middleware] max_request_body_size).",
    ),
    cfg.IntOpt(
        "threads",
        default=8,
        min=1,
        help="Threads running requests; each may hold one database connection, so "
        "keep it within [database] max_pool_size plus max_overflow. Slow or idle "
        "clients do not hold a thread: only requests fully received do.",
    ),
]
