"""Options of the ``[database]`` group: where servers and migrations live."""

from oslo_config import cfg

GROUP = cfg.OptGroup(
    "database",
    title="Database options",
    help="The database holding flavors, servers, request specs, migrations and the "
    "transition journal that crash recovery reads.",
)

OPTS = [
    cfg.StrOpt(
        "connection",
        default="sqlite:///$state_path/resize_sched.sqlite",
        secret=True,
        help="SQLAlchemy URL of the database. SQLite suits a single all-in-one "
        "process; use MariaDB/MySQL (mysql+pymysql://user:pass@host/db) or "
        "PostgreSQL (postgresql+psycopg://user:pass@host/db) as soon as several "
        "conductor workers or an API service share the database.",
    ),
    cfg.IntOpt(
        "max_pool_size",
        default=5,
        min=1,
        help="Connections kept open per process (MySQL and PostgreSQL only). Raise "
        "it when conductor workers log pool time-outs under load.",
    ),
    cfg.IntOpt(
        "max_overflow",
        default=10,
        min=0,
        help="Extra connections a process may open above max_pool_size in a burst.",
    ),
    cfg.IntOpt(
        "pool_timeout",
        default=30,
        min=1,
        help="Seconds to wait for a free pooled connection before failing.",
    ),
    cfg.IntOpt(
        "connection_recycle_time",
        default=3600,
        min=1,
        help="Seconds after which a pooled connection is replaced. Keep it below the "
        "server's idle time-out (MySQL wait_timeout) so no dead connection is used.",
    ),
    cfg.IntOpt(
        "db_max_retries",
        default=10,
        min=0,
        help="How many times a write transaction is run again, at most, after the "
        "database aborted it (a deadlock, a lock wait time-out, a Galera certification "
        "failure) or its connection was lost or refused (a server or Galera node going "
        "away or still joining). 0 turns the retry off. Every new run is logged at INFO.",
    ),
    cfg.FloatOpt(
        "db_retry_interval",
        default=0.1,
        min=0,
        help="Seconds to wait before the first new run of a failed write transaction.",
    ),
    cfg.BoolOpt(
        "db_inc_retry_interval",
        default=True,
        help="Double the wait before each further run (after a deadlock the wait "
        "is drawn at random below it, so that the losers do not meet again).",
    ),
    cfg.FloatOpt(
        "db_max_retry_interval",
        default=2.0,
        min=0,
        help="The longest wait, in seconds, between two runs of a failed write "
        "transaction. With the defaults the waits add up to about 13 seconds: long "
        "enough for a proxy to move to another Galera node.",
    ),
    cfg.FloatOpt(
        "db_connection_retry_timeout",
        default=15.0,
        min=0,
        help="The longest time, in seconds from its first run, a write transaction "
        "keeps being run again after connection errors (a connection lost, a Galera "
        "node still joining), whatever db_max_retries allows; then the error reaches "
        "the service. The default rides out a proxy moving to another Galera node "
        "and a node's rejoin. A database that cannot be reached at all (connection "
        "refused, no route to its host, its name not resolving) is tried once more "
        "after db_retry_interval, then the write fails with an error naming the "
        "database's address and what to check.",
    ),
    cfg.IntOpt(
        "mysql_wsrep_sync_wait",
        min=0,
        max=15,
        help="MariaDB Galera only: the wsrep_sync_wait every connection sets for its "
        "session (unset: the server's own, 0 by default). 3 makes reads, updates "
        "and deletes wait until the node has applied every write the cluster "
        "committed before them, so a service reading on one node sees what "
        "another wrote on another node a moment earlier, at the cost of a "
        "round trip to the cluster per statement. Not needed when the proxy sends "
        "every connection to one node (the recommended set-up); see the install "
        "guide.",
    ),
    cfg.BoolOpt(
        "connection_debug",
        default=False,
        help="Log every SQL statement at DEBUG. Very verbose; for troubleshooting.",
    ),
]
