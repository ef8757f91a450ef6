"""Helpers of the data API: WHERE clauses for expected state, input checks."""

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from resize_sched import exception
from resize_sched.db import models, session


def _sql(clause) -> str:
    return str(clause.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))


def test_match() -> None:
    assert _sql(session.match(models.Server.task_state, None)) == "servers.task_state IS NULL"
    assert _sql(session.match(models.Server.status, "ACTIVE")) == "servers.status = 'ACTIVE'"
    assert _sql(session.match(models.Server.task_state, (None, "a"))) == (
        "servers.task_state IN ('a') OR servers.task_state IS NULL"
    )
    assert session.match(models.Server.status, []).compare(sa.false())


def test_check_values() -> None:
    session.check_values(models.Server, {"status": "ACTIVE"}, what="server")
    with pytest.raises(exception.Invalid, match="cannot update server field.*created_at, nope"):
        session.check_values(models.Server, {"nope": 1, "created_at": 1}, what="server")


def test_whole_number_and_text() -> None:
    assert session.whole_number(3, "n", minimum=1) == 3
    for bad in (0, True, 1.5, "3", None):
        with pytest.raises(ValueError, match="^n must be"):
            session.whole_number(bad, "n", minimum=1)
    assert session.text("  x ", "name") == "x"
    with pytest.raises(ValueError, match="at most 3"):
        session.text("abcd", "name", max_length=3)


def test_describe_expected() -> None:
    assert session.describe_expected({"status": "ACTIVE", "task_state": (None, "x")}) == (
        "status=ACTIVE, task_state=None|x"
    )
