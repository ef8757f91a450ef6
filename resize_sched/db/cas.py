"""Compare-and-swap updates: change a row only where it is still in the state the caller saw.

:func:`update_where` and :func:`cas_update` (the same, with its statement
built once per shape) are the ``UPDATE ... WHERE <expected state>`` every
state change that may race is made of: of two callers, exactly one wins and
the other gets a typed conflict naming the state it found (told with
:func:`describe` and :func:`describe_expected`). :func:`check_values` refuses
values for columns that do not exist or may not change; :func:`match` is the
one way a value is compared with a column (None is NULL, a list is any of).
"""

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import InstrumentedAttribute, Session

from resize_sched import exception
from resize_sched.db.retry import already_done

# Columns no update may set.
_IMMUTABLE = frozenset({"id", "uuid", "created_at", "updated_at"})


@functools.cache
def _columns(model: type) -> frozenset[str]:
    """The names of ``model``'s columns (read once per model)."""
    return frozenset(sa.inspect(model).columns.keys())


def check_values(
    model: type, values: Mapping[str, Any], *, what: str, compared: bool = False
) -> None:
    """Reject values for columns that do not exist or may not change.

    :param model: the ORM class.
    :param values: column name -> new value.
    :param what: the object's name, for the message.
    :param compared: the values are only compared (a compare-and-swap's
        expectations), so immutable columns are allowed.
    :raises resize_sched.exception.Invalid: an unknown or immutable column.
    """
    if not values:
        return
    columns = _columns(model)
    fixed = frozenset() if compared else _IMMUTABLE
    bad = sorted(k for k in values if k not in columns or k in fixed)
    if bad:
        raise exception.Invalid(reason=f"cannot update {what} field(s) {', '.join(bad)}")


def match(column: InstrumentedAttribute[Any], value: Any) -> sa.ColumnElement[bool]:
    """A WHERE clause: ``column`` equals ``value``.

    ``None`` matches NULL; a list, tuple or set matches any of its members
    (``None`` among them matching NULL).
    """
    if isinstance(value, list | tuple | set | frozenset):
        members = [v for v in value if v is not None]
        clauses: list[sa.ColumnElement[bool]] = []
        if members:
            clauses.append(column.in_(members))
        if len(members) != len(value):
            clauses.append(column.is_(None))
        return sa.or_(*clauses) if clauses else sa.false()
    if value is None:
        return column.is_(None)
    return column == value


def update_where(
    session: Session,
    model: type,
    uuid: str,
    conditions: Iterable[sa.ColumnElement[bool]],
    values: Mapping[str, Any],
    *,
    reload: bool = True,
) -> tuple[int, Any]:
    """Compare-and-swap: update the row ``uuid`` only where ``conditions`` hold.

    :param reload: read the row back after a change too; False: only when
        nothing changed (to tell why), a statement saved on the way that wins.
    :returns: (rows changed, 0 or 1; the row as it is now, or None if absent
        or not read), so a caller can tell "not found" from "not in the
        expected state".
    """
    key = model.uuid  # type: ignore[attr-defined]
    result = session.execute(
        sa.update(model)
        .where(key == uuid, *conditions)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount and not reload:
        return result.rowcount, None
    row = session.scalars(
        sa.select(model).where(key == uuid).execution_options(populate_existing=True)
    ).first()
    if not result.rowcount and already_done(row, values):
        return 1, row
    return result.rowcount, row


# -- compare-and-swap with statements built once ---------------------------------------
#
# Building a statement and its cache key costs far more Python than running it
# (a few hundred microseconds against tens): the steps' statements are built
# once per shape, with bound parameters, and run as Core.

#: the bound parameter :func:`cas_update` gives the row's uuid in; a ``key``
#: expression of its own binds it too
CAS_KEY = "cas_key"


def _shape(value: Any) -> str:
    """How :func:`match` compares with ``value``."""
    if isinstance(value, list | tuple | set | frozenset):
        members = [v for v in value if v is not None]
        if not members:
            return "null" if value else "false"
        return "in" if len(members) == len(value) else "in_or_null"
    return "null" if value is None else "eq"


def _matching(column: sa.Column[Any], shape: str, name: str) -> sa.ColumnElement[bool]:
    """:func:`match` of ``column`` against the bound parameter ``name``."""
    if shape == "eq":
        return column == sa.bindparam(name, type_=column.type)
    if shape == "null":
        return column.is_(None)
    if shape == "false":
        return sa.false()
    found = column.in_(sa.bindparam(name, expanding=True))
    return sa.or_(found, column.is_(None)) if shape == "in_or_null" else found


@functools.cache
def _cas_statement(
    model: type,
    key: sa.ColumnElement[bool] | None,
    columns: tuple[str, ...],
    shapes: tuple[tuple[str, str], ...],
    fixed: tuple[sa.ColumnElement[bool], ...],
) -> sa.Update:
    table: sa.Table = model.__table__  # type: ignore[attr-defined]
    where = [table.c.uuid == sa.bindparam(CAS_KEY) if key is None else key]
    where += [
        _matching(table.c[name], shape, f"cas_w{i}") for i, (name, shape) in enumerate(shapes)
    ]
    return (
        sa.update(table)
        .where(*where, *fixed)
        .values({c: sa.bindparam(f"cas_v_{c}", type_=table.c[c].type) for c in columns})
    )


def cas_update(
    session: Session,
    model: type,
    uuid: str,
    values: Mapping[str, Any],
    *,
    expected: Iterable[tuple[str, Any]] = (),
    fixed: tuple[sa.ColumnElement[bool], ...] = (),
    key: sa.ColumnElement[bool] | None = None,
    reload: bool = True,
) -> tuple[int, Any]:
    """:func:`update_where` with the conditions given as data, so that the
    statement is built once per shape.

    :param expected: (column, value) pairs that must :func:`match`.
    :param fixed: more conditions; constant expressions (the same objects
        every call), for they are part of what the statement is kept by.
    :param key: how the row is found, instead of its ``uuid`` column: a
        constant expression that binds :data:`CAS_KEY` (``uuid`` goes there).
    :returns: as :func:`update_where`.
    """
    expected = list(expected)
    shapes = tuple((name, _shape(value)) for name, value in expected)
    statement = _cas_statement(model, key, tuple(values), shapes, fixed)
    params: dict[str, Any] = {CAS_KEY: uuid}
    params.update((f"cas_v_{c}", v) for c, v in values.items())
    for i, ((_, value), (_, shape)) in enumerate(zip(expected, shapes, strict=True)):
        if shape == "eq":
            params[f"cas_w{i}"] = value
        elif shape in ("in", "in_or_null"):
            params[f"cas_w{i}"] = [v for v in value if v is not None]
    result = session.execute(statement, params)
    if result.rowcount and not reload:
        return result.rowcount, None
    where = model.uuid == uuid if key is None else key  # type: ignore[attr-defined]
    row = session.scalars(
        sa.select(model).where(where).execution_options(populate_existing=True),
        {CAS_KEY: uuid},
    ).first()
    if not result.rowcount and already_done(row, values):
        return 1, row
    return result.rowcount, row


def describe(obj: object, keys: Iterable[str]) -> str:
    """``status=ACTIVE, task_state=None``: the named fields of ``obj``."""
    return ", ".join(f"{k}={getattr(obj, k)}" for k in keys)


def describe_expected(expected: Mapping[str, Any]) -> str:
    """``status=ACTIVE, task_state=None``, lists shown as ``a|b``."""
    parts = []
    for key, value in expected.items():
        if isinstance(value, list | tuple | set | frozenset):
            value = "|".join(str(v) for v in value)
        parts.append(f"{key}={value}")
    return ", ".join(parts)
