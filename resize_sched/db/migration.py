"""Alembic glue: upgrade the schema and read its revision, without an ini file.

The Alembic environment lives in the package (``resize_sched/db/migrations``)
and is configured here, in code, so ``resize-sched-manage db sync`` works
from any installed copy. The connection is handed to ``env.py`` through
``Config.attributes``; nothing reads ``sqlalchemy.url`` in online mode.

To add a migration after changing :mod:`resize_sched.db.models`::

    python -c "from resize_sched.db import migration; \\
        migration.make_revision('sqlite:////tmp/rev.sqlite', 'add foo')"

then review the generated file under ``migrations/versions/``.
"""

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from oslo_log import log as logging

from resize_sched.db import engines

LOG = logging.getLogger(__name__)

SCRIPT_LOCATION = "resize_sched.db:migrations"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    """Return an Alembic ``Config`` for our migrations.

    :param connection: the connection migrations run on, if any.
    :returns: the configuration.
    """
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest revision this code knows.

    :returns: the revision id.
    """
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations found"
    return head


def current_revision(engine: sa.Engine) -> str | None:
    """The revision the database is at.

    :param engine: the database.
    :returns: the revision id, or None when the schema was never created.
    """
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: sa.Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision``; a no-op when already there.

    :param engine: the database.
    :param revision: the target revision.
    """
    # NOTE: the write option makes SQLite take its write lock at BEGIN, so two
    # processes syncing at once take turns instead of failing half-way.
    with engine.execution_options(**{engines.WRITE_OPTION: True}).begin() as conn:
        command.upgrade(alembic_config(conn), revision)


def make_revision(url: str, message: str, autogenerate: bool = True) -> None:
    """Write a new migration script (a developer tool).

    The database at ``url`` is first upgraded to head, so autogenerate
    compares the models with the current schema.

    :param url: a scratch database URL.
    :param message: the revision message.
    :param autogenerate: compare the models with the schema and fill the script in.
    """
    engine = engines.create_engine(url)
    try:
        upgrade(engine)
        with engine.begin() as conn:
            command.revision(alembic_config(conn), message=message, autogenerate=autogenerate)
    finally:
        engine.dispose()
