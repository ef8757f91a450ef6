"""``resize-sched-api``: its command line, and how the shared server sets up waitress."""

import resource

import pytest

from resize_sched import conf as rs_conf
from resize_sched.api import server
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


class _Limits:
    """A stand-in for the process's RLIMIT_NOFILE (soft, hard)."""

    def __init__(self, soft: int, hard: int) -> None:
        self.value = (soft, hard)

    def get(self, which: int) -> tuple[int, int]:
        assert which == resource.RLIMIT_NOFILE
        return self.value

    def set(self, which: int, value: tuple[int, int]) -> None:
        assert which == resource.RLIMIT_NOFILE
        assert value[0] <= value[1] == self.value[1]
        self.value = value


@pytest.mark.parametrize(
    ("soft", "hard", "soft_after", "limit"),
    [
        (1024, 65536, 2000 + server.RESERVED_FDS, 2000),  # raised to fit
        (65536, 65536, 65536, 2000),  # already enough
        (1024, 1024, 1024, 1024 - server.RESERVED_FDS),  # cut to fit, with a warning
    ],
)
def test_the_open_file_limit_is_raised_to_fit_the_connections(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    soft: int,
    hard: int,
    soft_after: int,
    limit: int,
) -> None:
    limits = _Limits(soft, hard)
    monkeypatch.setattr(resource, "getrlimit", limits.get)
    monkeypatch.setattr(resource, "setrlimit", limits.set)
    assert server.connection_limit(2000) == limit
    assert limits.value == (soft_after, hard)
    warned = [r for r in caplog.records if "does not fit the open-file limit" in r.getMessage()]
    assert len(warned) == (1 if limit < 2000 else 0)


def test_the_server_polls_and_applies_the_wsgi_options() -> None:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    conf.set_override("bind_host", "127.0.0.1", group="api")
    conf.set_override("bind_port", 0, group="api")
    conf.set_override("connection_limit", 1500, group="wsgi")
    conf.set_override("client_socket_timeout", 45, group="wsgi")
    conf.set_override("request_read_timeout", 12, group="wsgi")
    http = server.create_server(conf, lambda environ, start_response: [], ident="test")
    try:
        adj = http.adj
        assert adj.asyncore_use_poll is True
        assert (adj.connection_limit, adj.channel_timeout, adj.cleanup_interval) == (1500, 45, 4)
        assert http.channel_class is server.ReadTimedChannel
    finally:
        http.close()
