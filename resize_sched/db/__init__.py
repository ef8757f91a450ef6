"""The database: SQLAlchemy models, Alembic migrations and a small data API.

:mod:`resize_sched.db.models` holds the tables (one module per subject) and
re-exports the state vocabulary of :mod:`resize_sched.db.states`,
:mod:`resize_sched.db.api` the :class:`~resize_sched.db.api.Database` every
service talks to (one mixin per area, built on :mod:`resize_sched.db.session`),
:mod:`resize_sched.db.migration` the Alembic glue behind ``resize-sched-manage
db sync``.
"""

import sqlalchemy as _sa
from oslo_db import exception as _db_exc

#: What a data API call raises when the database fails it (unreachable,
#: refused): SQLAlchemy's errors, and oslo.db's, which its exception filters
#: turn the driver's errors into (see :mod:`resize_sched.db.engines`).
ERRORS: tuple[type[Exception], ...] = (_sa.exc.SQLAlchemyError, _db_exc.DBError)


def driver_error(exc: BaseException) -> BaseException:
    """The driver's own exception behind a database error, for a short
    message: ``exc`` itself when it wraps none."""
    inner = getattr(exc, "inner_exception", None)
    if isinstance(inner, BaseException):
        exc = inner
    orig = getattr(exc, "orig", None) if isinstance(exc, _sa.exc.DBAPIError) else None
    return orig if isinstance(orig, BaseException) else exc
