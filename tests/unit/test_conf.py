"""Configuration: every group registers, and configs never share state."""

import pytest
from oslo_config import cfg

from resize_sched import conf as rs_conf


def _parsed() -> cfg.ConfigOpts:
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    return conf


def test_defaults() -> None:
    conf = _parsed()
    assert conf.resize.claim_strategy == "max_flavor"
    assert conf.resize.allow_same_host is True
    assert conf.resize.prefer_same_host is False
    assert conf.scheduler.max_attempts == 3
    assert conf.scheduler.max_placement_results == 1000
    assert conf.placement.service_type == "placement"
    assert conf.placement.connect_retries == 3
    assert conf.database.connection.endswith("/resize_sched.sqlite")


def test_overrides_do_not_leak_between_configs() -> None:
    first, second = _parsed(), _parsed()
    first.set_override("allow_same_host", False, group="resize")
    first.set_override("claim_strategy", "legacy", group="resize")
    assert first.resize.allow_same_host is False
    assert second.resize.allow_same_host is True
    assert second.resize.claim_strategy == "max_flavor"


def test_config_file_is_read(tmp_path) -> None:
    path = tmp_path / "rs.conf"
    path.write_text("[resize]\nclaim_strategy = drop_and_reclaim\n[scheduler]\nmax_attempts = 5\n")
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(path)])
    assert conf.resize.claim_strategy == "drop_and_reclaim"
    assert conf.scheduler.max_attempts == 5


def test_invalid_value_is_refused(tmp_path) -> None:
    path = tmp_path / "rs.conf"
    path.write_text("[scheduler]\nmax_attempts = 0\n")
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(path)])
    with pytest.raises(ValueError):
        conf.scheduler.max_attempts  # noqa: B018
