"""``resize-sched-api --help``."""

import pytest

from resize_sched.cmd import api


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        api.main(["--help"])
    assert caught.value.code == 0
    out = capsys.readouterr().out
    assert "Compute API v2.1 subset" in out
    assert "--config-file" in out


def test_unknown_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        api.main(["--no-such-option"])
    assert caught.value.code == 2
