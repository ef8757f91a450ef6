"""The database: SQLAlchemy models, Alembic migrations and a small data API.

:mod:`resize_sched.db.models` holds the tables and the status constants,
:mod:`resize_sched.db.api` the :class:`~resize_sched.db.api.Database` every
service talks to, :mod:`resize_sched.db.migration` the Alembic glue behind
``resize-sched-manage db sync``.
"""
