"""The database every resize_sched service talks to.

:class:`Database` owns one engine and answers every query with one explicit
transaction. State changes that may race are compare-and-swap updates
(``UPDATE ... WHERE <expected state>``): of two callers, exactly one wins and
the other gets a typed conflict naming the state it found.

The queries live in one mixin per area:

* :mod:`resize_sched.db.flavor_api` (flavors),
  :mod:`resize_sched.db.server_api` (servers),
  :mod:`resize_sched.db.request_spec_api` (request specs); server queries
  take a :mod:`resize_sched.db.project_scope`;
* :mod:`resize_sched.db.migration_api` (migration records),
  :mod:`resize_sched.db.step_api` (conductor steps taking and advancing a
  migration), :mod:`resize_sched.db.migration_journal_api` (the migration
  journal and holdings);
* :mod:`resize_sched.db.server_journal_api` (a server's own writes to
  Placement);
* :mod:`resize_sched.db.host_api` (services, compute nodes);
* :mod:`resize_sched.db.action_api` (instance actions and events);
* :mod:`resize_sched.db.usage_api` (usage over time);
* :mod:`resize_sched.db.lease_api` (the conductors' leases);
* :mod:`resize_sched.db.aggregate_api` (host aggregates and the zones they make).
* :mod:`resize_sched.db.quota_api` (quota limits and usage, key pairs,
  flavor access).
* :mod:`resize_sched.db.group_api` (server groups and their members).

This module adds the engine, schema and lifecycle. Flavor ids (``flavorid``,
the API-visible id) default to a new UUID.
"""

from typing import Any

from oslo_config import cfg
from oslo_log import log as logging

from resize_sched.db import engines, migration
from resize_sched.db.action_api import ActionApi
from resize_sched.db.aggregate_api import AggregateApi
from resize_sched.db.flavor_api import FlavorApi
from resize_sched.db.group_api import GroupApi
from resize_sched.db.host_api import HostApi
from resize_sched.db.host_state_api import HostStateApi
from resize_sched.db.lease_api import LeaseApi
from resize_sched.db.migration_api import MigrationApi
from resize_sched.db.migration_journal_api import MigrationJournalApi
from resize_sched.db.models import Flavor, JournalEntry, Migration, RequestSpec, Server
from resize_sched.db.quota_api import QuotaApi
from resize_sched.db.request_spec_api import RequestSpecApi
from resize_sched.db.retry import DEFAULT_RETRY, RetryPolicy
from resize_sched.db.server_api import ServerApi
from resize_sched.db.server_journal_api import ServerJournalApi
from resize_sched.db.step_api import StepApi
from resize_sched.db.usage_api import UsageApi

__all__ = ["Database", "Flavor", "JournalEntry", "Migration", "RequestSpec", "Server"]

LOG = logging.getLogger(__name__)


class Database(
    FlavorApi,
    ServerApi,
    RequestSpecApi,
    MigrationApi,
    StepApi,
    MigrationJournalApi,
    ServerJournalApi,
    HostApi,
    HostStateApi,
    ActionApi,
    UsageApi,
    LeaseApi,
    AggregateApi,
    QuotaApi,
    GroupApi,
):
    """Flavors, servers, request specs, migrations and the journal, services and
    compute nodes, instance actions and their events, usage over time, the
    conductors' leases, host aggregates, in one database."""

    def __init__(
        self,
        url: str,
        *,
        max_pool_size: int = 5,
        max_overflow: int = 10,
        pool_timeout: int = 30,
        connection_recycle_time: int = 3600,
        echo: bool = False,
        retry_policy: RetryPolicy = DEFAULT_RETRY,
        mysql_wsrep_sync_wait: int | None = None,
    ) -> None:
        """Create the engine; nothing connects until the first query.

        :param url: SQLAlchemy URL (``sqlite:///path``, ``mysql+pymysql://``,
            ``postgresql+psycopg://``).
        :param max_pool_size: connections kept open.
        :param max_overflow: extra connections in a burst.
        :param pool_timeout: seconds to wait for a connection (SQLite: for
            the write lock).
        :param connection_recycle_time: seconds before a connection is replaced.
        :param echo: log every statement.
        :param retry_policy: how a write transaction that failed on a
            deadlock or a lost connection is run again.
        :param mysql_wsrep_sync_wait: MariaDB Galera: the ``wsrep_sync_wait``
            every connection sets (None: the server's).
        :raises sqlalchemy.exc.ArgumentError: a malformed URL.
        """
        self.retry_policy = retry_policy
        self._init_sessions(
            engines.create_engine(
                url,
                max_pool_size=max_pool_size,
                max_overflow=max_overflow,
                pool_timeout=pool_timeout,
                connection_recycle_time=connection_recycle_time,
                echo=echo,
                mysql_wsrep_sync_wait=mysql_wsrep_sync_wait,
            )
        )

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> "Database":
        """Build from the ``[database]`` options.

        :param conf: a parsed ``ConfigOpts`` with our options registered.
        :returns: the database.
        """
        group = conf.database
        return cls(
            group.connection,
            max_pool_size=group.max_pool_size,
            max_overflow=group.max_overflow,
            pool_timeout=group.pool_timeout,
            connection_recycle_time=group.connection_recycle_time,
            echo=group.connection_debug,
            retry_policy=RetryPolicy(
                max_retries=group.db_max_retries,
                retry_interval=group.db_retry_interval,
                inc_retry_interval=group.db_inc_retry_interval,
                max_retry_interval=group.db_max_retry_interval,
                connection_retry_timeout=group.db_connection_retry_timeout,
            ),
            mysql_wsrep_sync_wait=group.mysql_wsrep_sync_wait,
        )

    @property
    def url(self) -> str:
        """The URL, password hidden: safe for logs and messages."""
        return self.engine.url.render_as_string(hide_password=True)

    def sync(self, revision: str = "head") -> None:
        """Upgrade the schema to the newest revision (idempotent).

        :param revision: the target revision; the newest by default.
        :raises sqlalchemy.exc.OperationalError: the database is unreachable.
        :raises alembic.util.CommandError: an unknown revision.
        """
        before = self.version()
        migration.upgrade(self.engine, revision)
        after = self.version()
        if before != after:
            LOG.info("Upgraded database %s from %s to %s", self.url, before, after)

    def version(self) -> str | None:
        """The schema revision the database is at.

        :returns: the revision, or None when the schema was never created.
        """
        return migration.current_revision(self.engine)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()

    def __repr__(self) -> str:
        return f"<Database {self.url}>"

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.dispose()
