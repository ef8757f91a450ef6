"""The console scripts: --help, and a clear refusal of a bad strategy."""

import pytest

from resize_sched.cmd import all_in_one, conductor, demo


@pytest.mark.parametrize(
    ("main", "text"),
    [
        (conductor.main, "The resize_sched conductor"),
        (all_in_one.main, "fake compute hosts"),
        (demo.main, "bug 1790204"),
    ],
)
def test_help(main, text, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert text in " ".join(out.split())


def test_conductor_refuses_an_unknown_strategy(tmp_path, capsys) -> None:
    config = tmp_path / "c.conf"
    config.write_text("[resize]\nclaim_strategy = max_flavour\n")
    assert conductor.main(["--config-file", str(config)]) == 1
    err = capsys.readouterr().err
    assert "max_flavour" in err
    assert "drop_and_reclaim, legacy, max_flavor" in err
