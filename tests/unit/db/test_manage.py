"""``resize-sched-manage`` argument handling, in-process (nothing touches a database)."""

import pytest

from resize_sched.cmd import manage


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert manage.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "db sync" in out and "db version" in out


def test_usage_error_is_exit_code_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert manage.main(["db", "frobnicate"]) == 1
    assert "invalid choice" in capsys.readouterr().err


def test_missing_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert manage.main(["--config-file", "/nonexistent/rs.conf", "db", "version"]) == 1
    # NOTE: only the command's own lines: a thread an earlier test left
    # behind in this worker (a broker connection's heartbeat) may print to
    # this test's stderr too.
    err = capsys.readouterr().err
    ours = [line for line in err.splitlines() if line.startswith("resize-sched-manage")]
    assert ours == [
        "resize-sched-manage: error: Failed to find some config files: /nonexistent/rs.conf"
    ]
