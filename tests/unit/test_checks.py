"""Start-up and reload checks: the claim strategy on SIGHUP, Placement, unknown options."""

import logging
import socket
import types

import pytest
from oslo_config import cfg

from resize_sched import checks, exception, strategies
from resize_sched import conf as rs_conf
from resize_sched.cmd import compute
from resize_sched.conductor.service import ConductorService

INSTALLED = "drop_and_reclaim, legacy, max_flavor"


def _parsed(path):
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, ["--config-file", str(path)])
    return conf


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- reload -------------------------------------------------------------------------


def test_reload_refuses_an_unknown_strategy_and_keeps_the_old(tmp_path, caplog):
    config = tmp_path / "c.conf"
    config.write_text("[resize]\nclaim_strategy = max_flavor\n")
    conf = _parsed(config)
    config.write_text("[DEFAULT]\ndebug = true\n[resize]\nclaim_strategy = legcy\n")

    with caplog.at_level(logging.INFO):
        assert checks.reload_config(conf) == "max_flavor"
    assert conf.resize.claim_strategy == "max_flavor"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "legcy" in errors[0].getMessage() and INSTALLED in errors[0].getMessage()
    assert not errors[0].exc_info
    # The other mutable options were applied.
    assert conf.debug is True

    # Fixed in the file: the next reload takes it (the pin is gone).
    config.write_text("[resize]\nclaim_strategy = legacy\n")
    assert checks.reload_config(conf) == "legacy"
    assert conf.resize.claim_strategy == "legacy"
    config.write_text("[resize]\n")
    assert checks.reload_config(conf) == "max_flavor"  # back to the default


def test_reload_of_an_unreadable_file_changes_nothing(tmp_path, caplog):
    config = tmp_path / "c.conf"
    config.write_text("[resize]\nclaim_strategy = legacy\n")
    conf = _parsed(config)
    config.write_text("[resize\nclaim_strategy = max_flavor\n")
    assert checks.reload_config(conf) is None
    assert conf.resize.claim_strategy == "legacy"
    assert "cannot read" in caplog.text


def test_conductor_reload_uses_its_cached_loader(tmp_path, caplog):
    config = tmp_path / "c.conf"
    config.write_text("[resize]\nclaim_strategy = legacy\n")
    conf = _parsed(config)
    loaded = []

    def strategy(name):
        loaded.append(name)
        return strategies.load(name)

    scheduler = types.SimpleNamespace(reload_plugins=lambda: True)
    service = types.SimpleNamespace(
        conf=conf, deps=types.SimpleNamespace(strategy=strategy, scheduler=scheduler)
    )
    config.write_text("[resize]\nclaim_strategy = nope\n")
    with caplog.at_level(logging.INFO):
        ConductorService.reload(service)
    assert loaded == ["nope"]
    assert conf.resize.claim_strategy == "legacy"
    assert "new resizes use claim strategy legacy" in caplog.text
    config.write_text("[resize]\nclaim_strategy = drop_and_reclaim\n")
    ConductorService.reload(service)
    assert conf.resize.claim_strategy == "drop_and_reclaim"


def _scheduler(conf):
    from resize_sched.scheduler.manager import Scheduler

    return Scheduler(types.SimpleNamespace(), conf)  # type: ignore[arg-type]


def test_reload_refuses_an_unknown_filter_and_keeps_the_running_ones(tmp_path, caplog):
    config = tmp_path / "c.conf"
    config.write_text("[filter_scheduler]\nenabled_filters = ComputeFilter\n")
    conf = _parsed(config)
    scheduler = _scheduler(conf)
    scheduler.load_plugins()
    service = types.SimpleNamespace(
        conf=conf,
        deps=types.SimpleNamespace(strategy=strategies.load, scheduler=scheduler),
    )
    config.write_text(
        "[filter_scheduler]\nenabled_filters = ComputeFilter, SameHostFiltre\n"
        "weight_classes = CPUWeigher\n"
    )
    with caplog.at_level(logging.INFO):
        ConductorService.reload(service)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "SameHostFiltre" in errors[0] and "keeping filters ComputeFilter" in errors[0]
    assert "DifferentHostFilter" in errors[0]  # the installed ones are listed
    filters, weighers = scheduler._plugins()
    assert filters.names == ("ComputeFilter",)
    assert len(weighers.names) == 6  # the running default, not CPUWeigher alone

    config.write_text(
        "[filter_scheduler]\nenabled_filters = SameHostFilter\nweight_classes = CPUWeigher\n"
    )
    ConductorService.reload(service)
    filters, weighers = scheduler._plugins()
    assert (filters.names, weighers.names) == (("SameHostFilter",), ("CPUWeigher",))


@pytest.mark.parametrize(
    "option, name, listed",
    [
        ("enabled_filters", "NopeFilter", "ComputeFilter"),
        ("weight_classes", "NopeWeigher", "RAMWeigher"),
    ],
)
def test_conductor_refuses_to_start_with_an_unknown_filter_or_weigher(
    tmp_path, option, name, listed
):
    config = tmp_path / "c.conf"
    config.write_text(
        f"[DEFAULT]\ntransport_url = fake:/\n[database]\nconnection = sqlite:///{tmp_path}/db\n"
        f"[filter_scheduler]\n{option} = {name}\n"
    )
    conf = _parsed(config)
    with pytest.raises(exception.SchedulerPluginNotFound) as caught:
        ConductorService(conf, recover=False)
    assert name in str(caught.value) and listed in str(caught.value)
    assert f"[filter_scheduler] {option}" in str(caught.value)


# -- Placement ------------------------------------------------------------------------


def _unreachable(tmp_path):
    config = tmp_path / "c.conf"
    config.write_text(
        "[placement]\nauth_type = admin_token\ntoken = admin\n"
        f"endpoint = http://127.0.0.1:{_closed_port()}/placement\n"
        "connect_retries = 0\nstatus_code_retries = 0\n"
    )
    return config


def test_placement_problem_names_the_url_and_the_error(tmp_path):
    conf = _parsed(_unreachable(tmp_path))
    problem = checks.placement_problem(conf)
    assert problem is not None
    assert problem.startswith(f"Placement at {conf.placement.endpoint} does not answer GET /: ")
    assert "\n" not in problem


def test_compute_exits_with_one_line_when_placement_does_not_answer(tmp_path, capsys, caplog):
    config = _unreachable(tmp_path)
    assert compute.main(["--config-file", str(config)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "does not answer GET /" in err[0] and "127.0.0.1" in err[0]
    assert not [r for r in caplog.records if r.exc_info]


# -- unknown options ------------------------------------------------------------------


def test_unknown_options_and_groups_are_listed(tmp_path):
    config = tmp_path / "c.conf"
    config.write_text(
        "[DEFAULT]\ndebug = true\ntransport_url = fake://\nrpc_response_timeout = 30\n"
        "[resize]\nclaim_strategy = legacy\nclaim_stratgy = max_flavor\n"
        "[placement]\nauth_type = password\nusername = u\npassword = p\n"
        "auth_url = http://k\nvalid_interfaces = internal\n"
        "[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 60\n"
        "[keystone_authtoken]\nwww_authenticate_uri = http://k\n"
        "[oslo_limit]\nendpoint_id = e\nauth_type = password\nsystem_scope = all\n"
        "user_domain_id = default\nendpoint_idd = e\n"
        "[resise]\nallow_same_host = false\n"
    )
    conf = _parsed(config)
    assert checks.unknown_options(conf) == [
        f"{config}: unknown option [resize] claim_stratgy",
        f"{config}: unknown option [oslo_limit] endpoint_idd",
        f"{config}: unknown group [resise]",
    ]


def test_unknown_options_are_warned_about(tmp_path, caplog):
    config = tmp_path / "c.conf"
    config.write_text("[conductor]\nstuck_afer = 5\n")
    conf = _parsed(config)
    with caplog.at_level(logging.WARNING):
        assert len(checks.warn_unknown_options(conf)) == 1
    assert "unknown option [conductor] stuck_afer" in caplog.text


@pytest.mark.parametrize("text", ["", "[DEFAULT]\n", "[resize]\nallow_same_host = false\n"])
def test_known_files_give_no_warning(tmp_path, text):
    config = tmp_path / "c.conf"
    config.write_text(text)
    assert checks.unknown_options(_parsed(config)) == []


def test_namespaces_are_those_of_the_sample_config():
    generator = "etc/resize_sched/resize_sched-config-generator.conf"
    sections = {}
    cfg.ConfigParser(generator, sections).parse()
    assert tuple(sections["DEFAULT"]["namespace"]) == checks.NAMESPACES


def test_the_sample_config_is_all_known():
    sample = "etc/resize_sched/resize_sched.conf.sample"
    conf = rs_conf.new_conf()
    rs_conf.parse_args(conf, [], default_config_files=[])
    # Only commented-out options in the sample: check its option names instead.
    known = checks._known(conf)
    group = "DEFAULT"
    for line in open(sample, encoding="utf-8"):
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1]
            assert group in known, group
        elif line.startswith("#") and " = " in line and not line.startswith("# "):
            name = line[1:].split(" = ")[0]
            assert name in known[group], (group, name)


def test_conductor_starts_anyway_when_placement_does_not_answer(tmp_path, monkeypatch, capfd):
    import cotyledon

    from resize_sched.cmd import conductor

    ran = []

    class Manager:
        def add(self, *args, **kwargs):
            pass

        def run(self):
            ran.append(True)

    monkeypatch.setattr(cotyledon, "ServiceManager", Manager)
    config = _unreachable(tmp_path)
    with config.open("a") as f:
        f.write("[conductor]\nworkers = 1\nstuck_aftr = 5\n")
    # NOTE: main() sets oslo.log up, which replaces pytest's handlers: read the output.
    assert conductor.main(["--config-file", str(config)]) == 0
    assert ran
    captured = capfd.readouterr()
    err = captured.out + captured.err  # oslo.log writes to stdout by default
    errors = [line for line in err.splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "does not answer GET /" in errors[0]
    assert "WARNING" in err and "unknown option [conductor] stuck_aftr" in err
    assert "Traceback" not in err
