"""The console scripts: --help, and a clear refusal of a bad strategy."""

import gc

import pytest

from resize_sched.cmd import all_in_one, conductor, demo, settle_heap


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


def test_settle_heap_sets_what_is_alive_apart_from_the_collector() -> None:
    alive = [object()]
    gc.unfreeze()
    try:
        assert any(o is alive for o in gc.get_objects())
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert not any(o is alive for o in gc.get_objects())
        made_after = [object()]
        assert any(o is made_after for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_a_conductor_worker_settles_its_heap_once_started(monkeypatch) -> None:
    calls: list[str] = []

    class Service:
        def __init__(self, conf, recover: bool) -> None:
            calls.append(f"built recover={recover}")

        def start(self) -> None:
            calls.append("started")

    monkeypatch.setattr("resize_sched.conductor.service.ConductorService", Service)
    monkeypatch.setattr(conductor, "settle_heap", lambda: calls.append("settled"))
    conductor.ConductorWorker(0, conf=None).run()
    assert calls == ["built recover=True", "started", "settled"]
