"""``resize-sched-simulate``'s command line: help, and what it refuses before running."""

import sys

import pytest

from resize_sched.cmd import simulate


def test_help_lists_the_options(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        simulate.main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "oracle" in out
    for option in ("--hosts", "--resizes", "--workers", "--utilisation", "--seed", "--json"):
        assert option in out


def test_plots_without_matplotlib_name_the_extra(monkeypatch, tmp_path, capsys) -> None:
    # NOTE: None in sys.modules makes the import fail as if it were missing.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert simulate.main(["--plots-dir", str(tmp_path / "plots"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "resize_sched[simulate]" in err
    assert not (tmp_path / "plots").exists()


def test_an_unknown_strategy_is_refused(capsys) -> None:
    assert simulate.main(["--strategies", "max_flavour", "--quiet"]) == 1
    assert "max_flavour" in capsys.readouterr().err
