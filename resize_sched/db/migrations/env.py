"""Alembic environment of resize_sched.

Run through :mod:`resize_sched.db.migration` (``resize-sched-manage db sync``),
which hands over an open connection in ``config.attributes["connection"]``.
Offline mode (SQL script output) needs ``sqlalchemy.url`` set on the config.
"""

from alembic import context

from resize_sched.db import models

config = context.config
target_metadata = models.Base.metadata


def run_migrations_offline() -> None:
    """Emit the SQL for the migrations instead of running it."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on the connection we were given."""
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "resize_sched migrations need a connection; run 'resize-sched-manage db sync'"
        )
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # NOTE: SQLite cannot ALTER most things; batch mode copies the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
