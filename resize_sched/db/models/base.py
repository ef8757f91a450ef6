"""The column types and the declarative base every table of resize_sched is built on.

Every timestamp is a timezone-aware UTC ``datetime`` (:class:`UTCDateTime`);
every structured value is a portable ``JSON`` column, so the same models work
on SQLite, MariaDB/MySQL and PostgreSQL. Constraint and index names follow
:data:`NAMING_CONVENTION`, the names the Alembic migrations give them.
"""

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, MappedColumn, mapped_column
from sqlalchemy.types import TypeEngine

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime.datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.datetime.now(datetime.UTC)


class UTCDateTime(sa.TypeDecorator[datetime.datetime]):
    """A ``datetime`` that is always timezone-aware UTC in Python.

    PostgreSQL stores it as ``timestamp with time zone``; SQLite and MySQL,
    which have no such type, store naive UTC (MySQL with microseconds) and
    get the UTC zone back on load. A naive value given in is taken as UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        value = value.astimezone(datetime.UTC)
        if dialect.name != "postgresql":
            value = value.replace(tzinfo=None)
        return value

    def process_result_value(
        self, value: datetime.datetime | None, dialect: Dialect
    ) -> datetime.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=datetime.UTC)
        return value.astimezone(datetime.UTC)


#: JSON whose Python ``None`` is SQL NULL (so ``IS NULL`` filters work).
NullableJSON = sa.JSON(none_as_null=True)


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class TimestampMixin:
    created_at: Mapped[datetime.datetime] = mapped_column(
        UTCDateTime(), nullable=False, default=utcnow
    )
    updated_at: Mapped[datetime.datetime | None] = mapped_column(
        UTCDateTime(), nullable=True, onupdate=utcnow
    )


def serial_id(**options: Any) -> MappedColumn[Any]:
    """The integer primary key ``id`` most tables have, numbered by the database.

    :param options: more ``mapped_column`` options (``sort_order``).
    """
    return mapped_column(sa.Integer, primary_key=True, autoincrement=True, **options)


def unique_uuid() -> MappedColumn[Any]:
    """A required, unique uuid column: the public id of a row whose primary
    key is a number (a migration, a service, a group...)."""
    return mapped_column(sa.String(36), nullable=False, unique=True)


def owned_by(target: str) -> MappedColumn[Any]:
    """A required foreign key to ``target`` (``"table.id"``) whose rows go
    when the row they point to goes (``ON DELETE CASCADE``): a member, a
    host or a metadata pair of its group, aggregate or flavor."""
    return mapped_column(sa.Integer, sa.ForeignKey(target, ondelete="CASCADE"), nullable=False)
