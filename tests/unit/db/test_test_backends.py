"""The DB test fixtures skip a backend outside CI and fail it under CI=true."""

import pytest

from tests.functional.fixtures import database as db_fixture


def test_skip_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RESIZE_SCHED_TEST_MYSQL_URL", raising=False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="RESIZE_SCHED_TEST_MYSQL_URL is not set"):
        db_fixture.server_url("mysql")


def test_ci_fails_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RESIZE_SCHED_TEST_POSTGRESQL_URL", raising=False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true and RESIZE_SCHED_TEST_POSTGRESQL"):
        db_fixture.server_url("postgresql")


def test_url_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESIZE_SCHED_TEST_MYSQL_URL", "mysql://root@db/test")
    assert db_fixture.server_url("mysql") == "mysql://root@db/test"


def test_scratch_database_names_are_unique() -> None:
    a = db_fixture.ScratchDatabase("mysql://root@db/test")
    b = db_fixture.ScratchDatabase("mysql://root@db/test")
    assert a.name != b.name and a.name.startswith("rs_test_")
    assert a.url.endswith(f"/{a.name}?charset=utf8mb4")
